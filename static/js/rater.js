// FLASK Eval rater pages: what the pointwise (rating.js) and the pairwise (pairwise.js)
// pages share. Loaded before either; the page calls `FlaskRater.start(define)` once,
// where `define(rater)` returns the page's description (below) and may keep `rater`.
//
// The forms work without JavaScript (radio inputs, plain POST). This adds, on both pages:
// - keys: up/down or j/k move between the rows of the form (one row per question),
//   r = rationale, Enter submits once every row has a value, s = skip (asks for a
//   reason; Enter confirms, Esc cancels), ? = help; the page maps its own keys to values;
// - the submit check for mouse users (the submit button lives outside the form);
// - active seconds on task, sent as the hidden field `[data-active-seconds]`, with one
//   definition of "active" for every kind of campaign: a second counts while the tab is
//   visible and the rater did something in the last IDLE_AFTER_MS (a key, a pointer
//   press or move, the wheel, a scroll, the window or the tab coming back to the front);
// - htmx panels: a 422 answer (the form with its errors) is swapped in, and a new panel
//   starts over at its first row (or at the first row the server complained about);
// - drafts: a form with `data-draft="<page>-draft:<assignment id>"` keeps its answers
//   (what the page's collectDraft returns) in localStorage, with the active seconds, on
//   every change; they survive a reload, are put back by the page's restoreDraft, and
//   are removed once the server accepted the submit or the skip. Drafts older than
//   DRAFT_MAX_AGE_MS are pruned on load. Without localStorage there are no drafts.
//
// The page's description (every member required unless marked optional):
//   panelId        id of the section htmx swaps ("rating-panel")
//   form, row      selectors of the form and of its rows (fieldsets, tabindex=-1)
//   keys           {key: value} the keys that choose a value for the focused row (letters
//                  lower-case; a digit works from the top row and from the numpad), or
//                  a function(row) returning that map for the focused row (rows whose
//                  scales differ)
//   rowName(row)   what the hints call a row
//   missingHint(name, byKeys)  the hint when a row has no value yet (after Enter, or
//                  after a click on the submit button)
//   complete       the hint once every row has a value
//   openRationale(row, form)   where `r` puts the focus
//   collectDraft() -> object, restoreDraft(draft) -> number of answers put back
//                  optional: the page's answers in a draft, and back (values the
//                  server sent, after an error, win over the draft)
//   onLoad(), onInit(), onChange(event), onInput(event)   optional hooks
//   onKey(key)     optional: a key none of the above uses (not while typing, not with
//                  the help open); returns true when it handled the key
// `rater`: form() (the current panel's form, or null), rows(), activeSeconds(),
// setActiveSeconds(n) (to resume a draft's count), hint(text).
window.FlaskRater = (function () {
  "use strict";

  var IDLE_AFTER_MS = 60 * 1000;
  var DRAFT_MAX_AGE_MS = 14 * 24 * 3600 * 1000;

  function start(define) {
    var state = { form: null, rows: [], current: 0, active: 0, lastInteraction: Date.now() };

    var rater = {
      form: function () {
        return state.form;
      },
      rows: function () {
        return state.rows;
      },
      activeSeconds: function () {
        return state.active;
      },
      setActiveSeconds: function (seconds) {
        state.active = seconds;
        syncActiveField();
      },
      hint: hint,
    };
    var page = define(rater);

    function call(hook, arg) {
      if (page[hook]) page[hook](arg);
    }

    // --- Small helpers -------------------------------------------------------------

    function rowValue(row) {
      var checked = row.querySelector("input.seg-input:checked");
      return checked ? checked.value : "";
    }

    function hint(text) {
      var el = document.querySelector("[data-submit-hint]");
      if (el) el.textContent = text;
    }

    function missingHint(index, byKeys) {
      return page.missingHint(page.rowName(state.rows[index]), byKeys);
    }

    // The value the key chooses, or null. The numpad by its code first: with NumLock
    // off its digits report arrows.
    function choiceFor(event, key) {
      var keys = typeof page.keys === "function" ? page.keys(state.rows[state.current]) || {} : page.keys;
      var numpad = /^Numpad([0-9])$/.exec(event.code || "");
      if (numpad && Object.prototype.hasOwnProperty.call(keys, numpad[1])) return keys[numpad[1]];
      return Object.prototype.hasOwnProperty.call(keys, key) ? keys[key] : null;
    }

    function isTyping(el) {
      if (!el || !el.closest) return false;
      if (el.isContentEditable) return true;
      return !!el.closest("textarea, select, input:not([type=radio]):not([type=checkbox])");
    }

    function isReadonly() {
      // The review page of a closed campaign shows the scores with disabled inputs.
      return !!state.form.querySelector("input.seg-input:disabled");
    }

    function helpDialog() {
      return document.querySelector("dialog[data-rater-help]");
    }

    function prefersReducedMotion() {
      return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    }

    // --- Focus between rows --------------------------------------------------------

    // focus: move the keyboard focus to the row; scroll: bring it into view as well
    // (not on a new panel: the rater starts reading at the top, with the instruction).
    function setCurrent(index, focus, scroll) {
      if (!state.rows.length) return;
      index = Math.max(0, Math.min(state.rows.length - 1, index));
      state.current = index;
      state.rows.forEach(function (row, i) {
        row.classList.toggle("is-current", i === index);
      });
      if (focus) {
        var row = state.rows[index];
        row.focus({ preventScroll: true });
        if (scroll !== false) {
          row.scrollIntoView({ block: "nearest", behavior: prefersReducedMotion() ? "auto" : "smooth" });
        }
      }
    }

    function firstMissing() {
      for (var i = 0; i < state.rows.length; i++) {
        if (!rowValue(state.rows[i])) return i;
      }
      return -1;
    }

    // Choose a value for the focused row, then move on: to the next row, or from the
    // last one back to the first row still without a value.
    function choose(value) {
      var row = state.rows[state.current];
      if (!row) return;
      var input = row.querySelector('input.seg-input[value="' + value + '"]');
      if (!input || input.disabled) return;
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
      var missing = firstMissing();
      if (state.current < state.rows.length - 1) setCurrent(state.current + 1, true);
      else if (missing !== -1) setCurrent(missing, true);
      if (missing === -1) hint(page.complete);
    }

    // --- Submit, skip, help --------------------------------------------------------

    function trySubmit() {
      var missing = firstMissing();
      if (missing !== -1) {
        setCurrent(missing, true);
        hint(missingHint(missing, true));
        return;
      }
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
      }
    }

    function toggleHelp() {
      var dialog = helpDialog();
      if (!dialog) return;
      if (dialog.open) {
        dialog.close();
        return;
      }
      dialog.showModal();
      // Focus the title, not the close button: Esc or ? closes, and nothing looks pressed.
      var title = dialog.querySelector("h2");
      if (title) title.focus();
    }

    // --- Active time ---------------------------------------------------------------

    function activeField() {
      return state.form ? state.form.querySelector("[data-active-seconds]") : null;
    }

    function syncActiveField() {
      var field = activeField();
      if (field) field.value = String(Math.round(state.active));
    }

    function markActive() {
      state.lastInteraction = Date.now();
    }

    // Each tick adds a second when the rule holds. A hidden tab's timers are throttled,
    // which costs nothing: a hidden tab does not count.
    setInterval(function () {
      if (!activeField() || document.visibilityState !== "visible") return;
      if (Date.now() - state.lastInteraction > IDLE_AFTER_MS) return;
      state.active += 1;
      syncActiveField();
      if (state.active % 10 === 0) saveDraft();
    }, 1000);

    // Capture: a scroll inside a text box does not bubble, and a handler that stops a
    // key must not hide it from the meter.
    ["keydown", "pointerdown", "pointermove", "wheel", "scroll"].forEach(function (name) {
      document.addEventListener(name, markActive, { passive: true, capture: true });
    });
    window.addEventListener("focus", markActive);
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "visible") markActive();
      else saveDraft();
    });

    // --- Drafts --------------------------------------------------------------------

    var draftTimer = null;
    var pendingDraftKey = null;

    function storage() {
      try {
        return window.localStorage;
      } catch (e) {
        return null; // private mode or disabled: no drafts, everything else works
      }
    }

    function draftKey() {
      return state.form && page.collectDraft ? state.form.getAttribute("data-draft") : null;
    }

    function saveDraft() {
      var key = draftKey();
      var store = storage();
      if (!key || !store) return;
      var draft = page.collectDraft();
      draft.savedAt = Date.now();
      draft.active = Math.round(state.active);
      try {
        store.setItem(key, JSON.stringify(draft));
      } catch (e) {
        /* storage full: the draft is a convenience, not a requirement */
      }
    }

    function saveDraftSoon() {
      clearTimeout(draftTimer);
      draftTimer = setTimeout(saveDraft, 300);
    }

    function restoreDraft() {
      var key = draftKey();
      var store = storage();
      if (!key || !store) return;
      var draft;
      try {
        draft = JSON.parse(store.getItem(key) || "null");
      } catch (e) {
        draft = null;
      }
      if (!draft) return;
      state.active = Number(draft.active) || 0;
      syncActiveField();
      if (page.restoreDraft(draft)) hint("Your draft was restored.");
    }

    function pruneOldDrafts() {
      var store = storage();
      if (!store) return;
      var now = Date.now();
      for (var i = store.length - 1; i >= 0; i--) {
        var key = store.key(i);
        if (!key || !/^[a-z]+-draft:/.test(key)) continue;
        try {
          var draft = JSON.parse(store.getItem(key));
          if (!draft || now - (draft.savedAt || 0) > DRAFT_MAX_AGE_MS) store.removeItem(key);
        } catch (e) {
          store.removeItem(key);
        }
      }
    }

    // The server accepted the answer (or the skip): the draft has served its purpose.
    // The key is taken when the request starts: by the time it ends, the next
    // assignment's panel may already be in the page. (When the form was swapped out,
    // htmx reports the end on an ancestor, hence the pending key.)
    document.addEventListener("htmx:beforeRequest", function (event) {
      var elt = event.detail.elt;
      if (elt && elt.matches && (elt === state.form || elt.matches("form[data-skip-form]"))) {
        saveDraft();
        pendingDraftKey = draftKey();
      }
    });
    document.addEventListener("htmx:afterRequest", function (event) {
      if (!pendingDraftKey) return;
      var store = storage();
      if (store && event.detail.successful && event.detail.xhr.status === 200) store.removeItem(pendingDraftKey);
      pendingDraftKey = null;
    });

    // --- Set-up of a (new) panel ---------------------------------------------------

    function init() {
      state.form = document.querySelector(page.form);
      state.rows = state.form ? Array.prototype.slice.call(state.form.querySelectorAll(page.row)) : [];
      state.active = 0;
      state.lastInteraction = Date.now();
      document.querySelectorAll("[data-help-open]").forEach(function (button) {
        button.hidden = false;
      });
      if (!state.form) return;
      call("onInit");
      restoreDraft();
      syncActiveField();
      // After an error, start at the first row the server complained about.
      var errorRow = state.form.querySelector(page.row + ".has-error");
      var start = errorRow ? state.rows.indexOf(errorRow) : 0;
      var skipBox = document.getElementById("skip-box");
      if (skipBox && skipBox.open) {
        setCurrent(start, false);
        openSkip();
      } else {
        setCurrent(start, true, !!errorRow);
      }
    }

    // --- Events --------------------------------------------------------------------

    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
      // A key between htmx's swap of a new panel and its settle (when init runs)
      // must act on the new panel, not on the rows just removed.
      if (state.form && !document.body.contains(state.form) && document.querySelector(page.form)) {
        init();
        state.earlyInit = state.form;
      }
      var target = event.target;
      var help = helpDialog();
      if (help && help.open) {
        if (event.key === "?") {
          event.preventDefault();
          help.close();
        }
        return; // Esc closes the dialog natively
      }
      if (isTyping(target)) {
        if (event.key === "Escape") {
          if (target.closest("#skip-box")) {
            event.preventDefault();
            closeSkip();
          } else if (state.form && state.form.contains(target)) {
            event.preventDefault(); // from a rationale back to the rows
            setCurrent(state.current, true);
          }
        }
        return;
      }
      if (event.key === "?") {
        event.preventDefault();
        toggleHelp();
        return;
      }
      if (!state.form || !state.rows.length) return;
      var readonly = isReadonly();
      var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      var value = choiceFor(event, key);
      if (value !== null) {
        if (readonly) return;
        event.preventDefault();
        choose(value);
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
          if (readonly) return;
          event.preventDefault();
          page.openRationale(state.rows[state.current], state.form);
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
          if (readonly) return;
          event.preventDefault();
          trySubmit();
          return;
        default:
          if (page.onKey && page.onKey(key)) event.preventDefault();
      }
    });

    document.addEventListener("focusin", function (event) {
      var row = event.target.closest && event.target.closest(page.row);
      if (row && state.rows.indexOf(row) !== -1) setCurrent(state.rows.indexOf(row), false);
    });

    document.addEventListener("change", function (event) {
      if (!state.form || !state.form.contains(event.target)) return;
      call("onChange", event);
      saveDraft();
      if (event.target.matches("input.seg-input") && firstMissing() === -1) hint(page.complete);
    });

    document.addEventListener("input", function (event) {
      if (!state.form || !state.form.contains(event.target)) return;
      call("onInput", event);
      saveDraftSoon();
    });

    // Capture, so that a form missing a value never reaches htmx.
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
          hint(missingHint(missing, false));
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

    // A refused or failed submit (403, 5xx, no connection; app.js shows why at the top
    // of the page) must not leave "Submitting…" under the button.
    function notSubmitted(event) {
      var elt = event.detail.elt;
      if (elt && state.form && (elt === state.form || elt.contains(state.form))) {
        hint("Not submitted: see the message at the top of the page.");
      }
    }
    document.addEventListener("htmx:responseError", notSubmitted);
    document.addEventListener("htmx:sendError", notSubmitted);

    // Guidelines open on the first visit fold away once the first answer was saved.
    function collapseGuidelines() {
      var guidelines = document.querySelector("details.guidelines[data-auto-open]");
      if (guidelines) {
        guidelines.open = false;
        guidelines.removeAttribute("data-auto-open");
      }
    }

    document.addEventListener("htmx:afterSettle", function (event) {
      var panel = document.getElementById(page.panelId);
      if (panel && panel.querySelector(".saved-flash")) collapseGuidelines();
      // A new panel (the next item, or the same one with errors): start over.
      if (state.earlyInit && state.earlyInit === state.form && document.body.contains(state.form)) {
        state.earlyInit = null; // a key already set this panel up
        return;
      }
      state.earlyInit = null;
      if (event.detail.elt && event.detail.elt.id === page.panelId) init();
      else if (panel && !document.body.contains(state.form)) init();
    });

    function boot() {
      pruneOldDrafts();
      call("onLoad");
      init();
    }
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
    else boot();
  }

  return { start: start };
})();
