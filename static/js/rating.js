// FLASK Eval rating page (and the review of a rating): what rater.js leaves to it.
//
// - keys: each row's own, read from its inputs' `data-key` (the server writes them from
//   the criterion's scale: the value's digit, 0 for the tenth point of 1-10, 1..n for
//   labels, n for N/A); on a row whose scale has no 0 key, 0 also means N/A. A key
//   scores the focused row and moves on; r opens its rationale; c goes to the
//   critique box (when the campaign asks for one);
// - the anchor of the chosen value is highlighted (`li.is-chosen`);
// - what a draft holds (rater.js keeps it, keyed by `data-draft` on the form): the
//   score and the rationale of each skill, and the critique.
FlaskRater.start(function (rater) {
  "use strict";

  function rowValue(row) {
    var checked = row.querySelector("input.seg-input:checked");
    return checked ? checked.value : "";
  }

  function critiqueBox() {
    var form = rater.form();
    return form ? form.querySelector("textarea[data-critique]") : null;
  }

  function rowKeys(row) {
    var keys = {};
    if (!row) return keys;
    row.querySelectorAll("input.seg-input[data-key]").forEach(function (input) {
      keys[input.getAttribute("data-key")] = input.value;
    });
    if (keys.n && !Object.prototype.hasOwnProperty.call(keys, "0")) keys["0"] = keys.n;
    return keys;
  }

  function highlight(row) {
    var value = rowValue(row);
    row.querySelectorAll(".rate-anchors li[data-score]").forEach(function (li) {
      li.classList.toggle("is-chosen", li.getAttribute("data-score") === value);
    });
  }

  function critiqueCount() {
    var box = critiqueBox();
    var counter = document.querySelector("[data-critique-count]");
    if (!box || !counter) return;
    var n = box.value.trim().length;
    var min = parseInt(box.getAttribute("data-min-length") || "0", 10);
    counter.textContent = n + " character" + (n === 1 ? "" : "s") + (min ? " of at least " + min : "");
    counter.classList.toggle("is-short", n > 0 && n < min);
  }

  function collectDraft() {
    var draft = { scores: {}, rationales: {} };
    rater.rows().forEach(function (row) {
      var key = row.getAttribute("data-skill");
      var value = rowValue(row);
      if (value) draft.scores[key] = value;
      var textarea = row.querySelector("textarea");
      if (textarea && textarea.value) draft.rationales[key] = textarea.value;
    });
    var box = critiqueBox();
    if (box && box.value) draft.critique = box.value;
    return draft;
  }

  function restoreDraft(draft) {
    var restored = 0;
    rater.rows().forEach(function (row) {
      var skill = row.getAttribute("data-skill");
      var value = draft.scores && draft.scores[skill];
      // Values the server sent back (after an error) win over the draft.
      if (value && !rowValue(row)) {
        var input = null;
        row.querySelectorAll("input.seg-input").forEach(function (candidate) {
          if (candidate.value === value) input = candidate;
        });
        if (input) {
          input.checked = true;
          restored++;
        }
      }
      var text = draft.rationales && draft.rationales[skill];
      var textarea = row.querySelector("textarea");
      if (text && textarea && !textarea.value) {
        textarea.value = text;
        var details = textarea.closest("details");
        if (details) details.open = true;
      }
      highlight(row);
    });
    var box = critiqueBox();
    if (box && draft.critique && !box.value) {
      box.value = draft.critique;
      restored++;
    }
    critiqueCount();
    return restored;
  }

  return {
    panelId: "rating-panel",
    form: "form[data-rating-form]",
    row: "[data-skill-row]",
    keys: rowKeys,
    rowName: function (row) {
      return row.getAttribute("data-skill-name") || row.getAttribute("data-skill");
    },
    missingHint: function (name, byKeys) {
      var row = null;
      rater.rows().forEach(function (candidate) {
        if ((candidate.getAttribute("data-skill-name") || candidate.getAttribute("data-skill")) === name) row = row || candidate;
      });
      var what = row ? (byKeys ? "keys " + row.getAttribute("data-key-hint") : row.getAttribute("data-scale")) : "";
      return "Score “" + name + "” first" + (what ? " (" + what + ")" : "") + ".";
    },
    complete: "Every criterion has a value. Press Enter to submit.",
    openRationale: function (row) {
      var details = row.querySelector("details.rationale");
      var textarea = row.querySelector("textarea");
      if (!details || !textarea) return;
      details.open = true;
      textarea.focus();
    },
    onInit: function () {
      rater.rows().forEach(highlight);
      critiqueCount();
    },
    onChange: function (event) {
      var row = event.target.closest && event.target.closest("[data-skill-row]");
      if (row) highlight(row);
    },
    onInput: function (event) {
      if (event.target.matches && event.target.matches("textarea[data-critique]")) critiqueCount();
    },
    onKey: function (key) {
      var box = critiqueBox();
      if (key !== "c" || !box) return false;
      box.focus();
      return true;
    },
    collectDraft: collectDraft,
    restoreDraft: restoreDraft,
  };
});
