// FLASK Eval pairwise comparison page (and the amend page of a vote): what rater.js
// leaves to it.
//
// - keys: a / 1 = A better, t / 2 = tie, b / 3 = B better (digits in the buttons'
//   left-to-right order: A | Tie | B), for the focused question
//   (overall first, then each skill), then focus moves on; r = the one rationale of
//   the pair;
// - what a draft holds (rater.js keeps it, keyed by `data-draft` on the compare
//   page's form; the amend page has none, like the review of a rating): the answer to
//   each question and the rationale;
// - narrow screens, where A and B are stacked (pairwise.css): tabs show one response
//   at a time and x switches between them (the focus stays on the question). Without
//   JavaScript both stay stacked.
FlaskRater.start(function (rater) {
  "use strict";

  function rowValue(row) {
    var checked = row.querySelector("input.seg-input:checked");
    return checked ? checked.value : "";
  }

  function collectDraft() {
    var draft = { labels: {}, rationale: "" };
    rater.rows().forEach(function (row) {
      var value = rowValue(row);
      if (value) draft.labels[row.getAttribute("data-key")] = value;
    });
    var textarea = rater.form().querySelector("textarea[name=rationale]");
    if (textarea) draft.rationale = textarea.value;
    return draft;
  }

  function restoreDraft(draft) {
    var restored = 0;
    rater.rows().forEach(function (row) {
      var value = draft.labels && draft.labels[row.getAttribute("data-key")];
      // Values the server sent back (after an error) win over the draft.
      if (value && !rowValue(row)) {
        var input = row.querySelector('input.seg-input[value="' + value + '"]');
        if (input) {
          input.checked = true;
          restored++;
        }
      }
    });
    var textarea = rater.form().querySelector("textarea[name=rationale]");
    if (textarea && draft.rationale && !textarea.value) textarea.value = draft.rationale;
    return restored;
  }

  // The tabs above the pair, added to each new panel; hidden on wide screens by CSS.
  function setUpTabs() {
    var grid = document.querySelector("#pairwise-panel .pair-grid");
    if (!grid || (grid.previousElementSibling && grid.previousElementSibling.matches(".pair-switch"))) return;
    var wrap = document.createElement("div");
    wrap.className = "pair-switch";
    var list = document.createElement("div");
    list.className = "pair-tabs";
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", "Responses");
    ["a", "b"].forEach(function (side) {
      var tab = document.createElement("button");
      tab.type = "button";
      tab.id = "pair-tab-" + side;
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", "response-" + side);
      tab.setAttribute("data-pair-tab", side);
      tab.textContent = "Response " + side.toUpperCase();
      list.appendChild(tab);
    });
    var hint = document.createElement("span");
    hint.className = "pair-switch-hint";
    var key = document.createElement("kbd");
    key.textContent = "x";
    hint.appendChild(key);
    hint.appendChild(document.createTextNode(" switches"));
    wrap.appendChild(list);
    wrap.appendChild(hint);
    grid.parentNode.insertBefore(wrap, grid);
    show("a");
  }

  function show(side) {
    var grid = document.querySelector("#pairwise-panel .pair-grid");
    if (!grid) return;
    grid.setAttribute("data-shown", side);
    document.querySelectorAll("[data-pair-tab]").forEach(function (tab) {
      var selected = tab.getAttribute("data-pair-tab") === side;
      tab.setAttribute("aria-selected", selected ? "true" : "false");
    });
  }

  // Only while the tabs are on screen (A and B stacked).
  function switchSides() {
    var wrap = document.querySelector("#pairwise-panel .pair-switch");
    var grid = document.querySelector("#pairwise-panel .pair-grid");
    if (!wrap || !grid || getComputedStyle(wrap).display === "none") return false;
    show(grid.getAttribute("data-shown") === "b" ? "a" : "b");
    return true;
  }

  document.addEventListener("click", function (event) {
    var tab = event.target.closest && event.target.closest("[data-pair-tab]");
    if (tab) show(tab.getAttribute("data-pair-tab"));
  });

  return {
    panelId: "pairwise-panel",
    form: "form[data-pairwise-form]",
    row: "[data-label-row]",
    keys: { a: "A", 1: "A", t: "tie", 2: "tie", b: "B", 3: "B" },
    rowName: function (row) {
      return row.getAttribute("data-title");
    },
    missingHint: function (name, byKeys) {
      return "Answer “" + name + "” first (" + (byKeys ? "a, b or t" : "A, B or tie") + ").";
    },
    complete: "Every question has an answer. Press Enter to submit.",
    openRationale: function (row, form) {
      var textarea = form.querySelector("textarea[name=rationale]");
      if (textarea) textarea.focus();
    },
    collectDraft: collectDraft,
    restoreDraft: restoreDraft,
    onInit: setUpTabs,
    onKey: function (key) {
      return key === "x" && switchSides();
    },
  };
});
