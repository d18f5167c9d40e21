// FLASK Eval pairwise comparison: keyboard choices, skip, help, active time.
//
// The form works without this file (radio inputs, plain POST). This adds:
// - keys: a / 1 = A better, b / 2 = B better, t / 3 = tie, for the focused question
//   (overall first, then each skill), then focus moves on; up/down or j/k move between
//   questions; r = rationale; Enter submits once every question has an answer;
//   s = skip (asks for a reason); ? = help;
// - active seconds on task (tab visible and the rater did something in the last
//   60 s), sent as the hidden field `active_seconds`.
(function () {
  "use strict";

  var IDLE_AFTER_MS = 60 * 1000;
  var KEYS = { a: "A", "1": "A", b: "B", "2": "B", t: "tie", "3": "tie" };
  var state = { form: null, rows: [], current: 0, active: 0, lastInteraction: Date.now() };

  function rowValue(row) {
    var checked = row.querySelector("input.seg-input:checked");
    return checked ? checked.value : "";
  }

  function hint(text) {
    var el = document.querySelector("[data-submit-hint]");
    if (el) el.textContent = text;
  }

  function isTyping(el) {
    if (!el || !el.closest) return false;
    if (el.isContentEditable) return true;
    return !!el.closest("textarea, select, input:not([type=radio]):not([type=checkbox])");
  }

  function setCurrent(index, focus) {
    if (!state.rows.length) return;
    index = Math.max(0, Math.min(state.rows.length - 1, index));
    state.current = index;
    state.rows.forEach(function (row, i) {
      row.classList.toggle("is-current", i === index);
    });
    if (focus) state.rows[index].focus({ preventScroll: true });
  }

  function firstMissing() {
    for (var i = 0; i < state.rows.length; i++) {
      if (!rowValue(state.rows[i])) return i;
    }
    return -1;
  }

  function choose(value) {
    var row = state.rows[state.current];
    if (!row) return;
    var input = row.querySelector('input.seg-input[value="' + value + '"]');
    if (!input) return;
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    var missing = firstMissing();
    if (state.current < state.rows.length - 1) setCurrent(state.current + 1, true);
    else if (missing !== -1) setCurrent(missing, true);
    if (missing === -1) hint("Every question has an answer. Press Enter to submit.");
  }

  function trySubmit() {
    if (!state.form) return;
    var missing = firstMissing();
    if (missing !== -1) {
      setCurrent(missing, true);
      hint("Answer “" + state.rows[missing].getAttribute("data-title") + "” first (a, b or t).");
      return;
    }
    syncActiveField();
    hint("Submitting…");
    if (state.form.requestSubmit) state.form.requestSubmit();
    else state.form.submit();
  }

  function openSkip() {
    var box = document.getElementById("skip-box");
    if (!box) return;
    box.open = true;
    var input = box.querySelector("input[name=reason]");
    if (input) input.focus();
  }

  function closeSkip() {
    var box = document.getElementById("skip-box");
    if (box && box.open) {
      box.open = false;
      setCurrent(state.current, true);
      return true;
    }
    return false;
  }

  function toggleHelp() {
    var dialog = document.getElementById("pairwise-help");
    if (!dialog) return;
    if (dialog.open) {
      dialog.close();
      return;
    }
    dialog.showModal();
    var title = dialog.querySelector("h2");
    if (title) title.focus();
  }

  function syncActiveField() {
    if (!state.form) return;
    var field = state.form.querySelector("[data-active-seconds]");
    if (field) field.value = String(Math.round(state.active));
  }

  setInterval(function () {
    if (!state.form || document.visibilityState !== "visible") return;
    if (Date.now() - state.lastInteraction > IDLE_AFTER_MS) return;
    state.active += 1;
    syncActiveField();
  }, 1000);

  ["keydown", "mousedown", "wheel", "touchstart", "scroll"].forEach(function (name) {
    document.addEventListener(
      name,
      function () {
        state.lastInteraction = Date.now();
      },
      { passive: true, capture: true },
    );
  });

  function init() {
    state.form = document.querySelector("form[data-pairwise-form]");
    state.rows = state.form
      ? Array.prototype.slice.call(state.form.querySelectorAll("[data-label-row]"))
      : [];
    state.active = 0;
    state.lastInteraction = Date.now();
    document.querySelectorAll("[data-help-open]").forEach(function (button) {
      button.hidden = false;
    });
    if (!state.form) return;
    syncActiveField();
    var errorRow = state.form.querySelector(".label-row.has-error");
    var start = errorRow ? state.rows.indexOf(errorRow) : 0;
    var skipBox = document.getElementById("skip-box");
    setCurrent(start, !(skipBox && skipBox.open));
    if (skipBox && skipBox.open) openSkip();
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    var help = document.getElementById("pairwise-help");
    if (help && help.open) {
      if (event.key === "?") {
        event.preventDefault();
        help.close();
      }
      return; // Esc closes the dialog natively
    }
    if (isTyping(target)) {
      if (event.key === "Escape") {
        event.preventDefault();
        if (!(target.closest("#skip-box") && closeSkip())) setCurrent(state.current, true);
      }
      return;
    }
    if (event.key === "?") {
      event.preventDefault();
      toggleHelp();
      return;
    }
    if (!state.form || !state.rows.length) return;
    var code = event.code || "";
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (/^Numpad[1-3]$/.test(code)) key = code.slice(-1);
    if (Object.prototype.hasOwnProperty.call(KEYS, key)) {
      event.preventDefault();
      choose(KEYS[key]);
      return;
    }
    switch (key) {
      case "ArrowDown":
      case "j":
        event.preventDefault();
        setCurrent(state.current + 1, true);
        return;
      case "ArrowUp":
      case "k":
        event.preventDefault();
        setCurrent(state.current - 1, true);
        return;
      case "r":
        event.preventDefault();
        var textarea = state.form.querySelector("textarea[name=rationale]");
        if (textarea) textarea.focus();
        return;
      case "s":
        if (!document.getElementById("skip-box")) return;
        event.preventDefault();
        openSkip();
        return;
      case "Escape":
        closeSkip();
        return;
      case "Enter":
        // Buttons, links and disclosure toggles keep their own Enter.
        if (target.closest && target.closest("button, a, summary")) return;
        event.preventDefault();
        trySubmit();
        return;
    }
  });

  document.addEventListener("focusin", function (event) {
    var row = event.target.closest && event.target.closest("[data-label-row]");
    if (row && state.rows.indexOf(row) !== -1) setCurrent(state.rows.indexOf(row), false);
  });

  document.addEventListener("change", function (event) {
    if (!state.form || !state.form.contains(event.target)) return;
    if (event.target.matches("input.seg-input") && firstMissing() === -1) {
      hint("Every question has an answer. Press Enter to submit.");
    }
  });

  // Mouse users: the submit button lives outside the form; check completeness too.
  document.addEventListener(
    "submit",
    function (event) {
      if (event.target !== state.form) return;
      syncActiveField();
      var missing = firstMissing();
      if (missing !== -1) {
        event.preventDefault();
        event.stopImmediatePropagation();
        setCurrent(missing, true);
        hint("Answer “" + state.rows[missing].getAttribute("data-title") + "” first (A, B or tie).");
      }
    },
    true,
  );

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-help-open]")) toggleHelp();
  });

  // htmx: a 422 answer carries the form with its errors; show it instead of failing.
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status === 422) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    // A new panel (next pair, or the same one with errors): start over at its top.
    if (document.getElementById("pairwise-panel")) init();
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
