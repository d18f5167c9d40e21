// FLASK Eval rating UI: keyboard scoring, a draft that survives a reload, active time.
//
// The rating form works without this file (radio inputs, plain POST). This adds:
// - keys: 1-5 (top row or numpad) score the focused skill and move on, n/0 = N/A,
//   up/down or j/k move between skills, r = rationale, Enter submits when every skill
//   has a value, s = skip (asks for a reason), ? = help;
// - a draft in localStorage, keyed by assignment id, removed once the server accepted
//   the submit or skip;
// - active seconds on task: counted only while the tab is visible and the rater did
//   something in the last 60 s; sent as the hidden field `active_seconds`.
(function () {
  "use strict";

  var IDLE_AFTER_MS = 60 * 1000;
  var DRAFT_PREFIX = "rating-draft:";
  var DRAFT_MAX_AGE_MS = 14 * 24 * 3600 * 1000;

  var state = {
    form: null,
    rows: [],
    current: 0,
    active: 0, // active seconds on the current assignment
    lastInteraction: Date.now(),
    draftTimer: null,
  };

  // --- Small helpers ---------------------------------------------------------------

  function storage() {
    try {
      return window.localStorage;
    } catch (e) {
      return null; // private mode or disabled: no drafts, everything else works
    }
  }

  function draftKey() {
    return state.form ? state.form.getAttribute("data-draft") : null;
  }

  function rowValue(row) {
    var checked = row.querySelector("input.seg-input:checked");
    return checked ? checked.value : "";
  }

  function rowName(row) {
    return row.getAttribute("data-skill-name") || row.getAttribute("data-skill");
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

  // --- Focus between skill rows -------------------------------------------------

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

  function prefersReducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
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
    if (!input || input.disabled) return;
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    var missing = firstMissing();
    if (state.current < state.rows.length - 1) {
      setCurrent(state.current + 1, true);
    } else if (missing !== -1) {
      setCurrent(missing, true);
    }
    if (missing === -1) hint("Every skill has a value. Press Enter to submit.");
  }

  // --- Submit, skip, help -------------------------------------------------------

  function trySubmit() {
    if (!state.form) return;
    var missing = firstMissing();
    if (missing !== -1) {
      setCurrent(missing, true);
      hint("Score “" + rowName(state.rows[missing]) + "” first (1-5 or n for N/A).");
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
      return true;
    }
    return false;
  }

  function toggleHelp() {
    var dialog = document.getElementById("rating-help");
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

  function openRationale() {
    var row = state.rows[state.current];
    if (!row) return;
    var details = row.querySelector("details.rationale");
    var textarea = row.querySelector("textarea");
    if (!details || !textarea) return;
    details.open = true;
    textarea.focus();
  }

  // --- Draft -----------------------------------------------------------------------

  function collectDraft() {
    var draft = { savedAt: Date.now(), active: Math.round(state.active), scores: {}, rationales: {} };
    state.rows.forEach(function (row) {
      var key = row.getAttribute("data-skill");
      var value = rowValue(row);
      if (value) draft.scores[key] = value;
      var textarea = row.querySelector("textarea");
      if (textarea && textarea.value) draft.rationales[key] = textarea.value;
    });
    return draft;
  }

  function saveDraft() {
    var key = draftKey();
    var store = storage();
    if (!key || !store) return;
    try {
      store.setItem(key, JSON.stringify(collectDraft()));
    } catch (e) {
      /* storage full: the draft is a convenience, not a requirement */
    }
  }

  function saveDraftSoon() {
    clearTimeout(state.draftTimer);
    state.draftTimer = setTimeout(saveDraft, 300);
  }

  function clearDraft(key) {
    var store = storage();
    if (key && store) store.removeItem(key);
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
    var restored = 0;
    state.rows.forEach(function (row) {
      var skill = row.getAttribute("data-skill");
      var value = draft.scores && draft.scores[skill];
      // Values the server sent back (after an error) win over the draft.
      if (value && !rowValue(row)) {
        var input = row.querySelector('input.seg-input[value="' + value + '"]');
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
    });
    if (restored) hint("Your draft was restored.");
  }

  function pruneOldDrafts() {
    var store = storage();
    if (!store) return;
    var now = Date.now();
    for (var i = store.length - 1; i >= 0; i--) {
      var key = store.key(i);
      if (!key || key.indexOf(DRAFT_PREFIX) !== 0) continue;
      try {
        var draft = JSON.parse(store.getItem(key));
        if (!draft || now - (draft.savedAt || 0) > DRAFT_MAX_AGE_MS) store.removeItem(key);
      } catch (e) {
        store.removeItem(key);
      }
    }
  }

  // --- Active time -------------------------------------------------------------------

  function markActive() {
    state.lastInteraction = Date.now();
  }

  function syncActiveField() {
    if (!state.form) return;
    var field = state.form.querySelector("[data-active-seconds]");
    if (field) field.value = String(Math.round(state.active));
  }

  setInterval(function () {
    if (!state.form || !state.form.hasAttribute("data-draft")) return;
    if (document.visibilityState !== "visible") return;
    if (Date.now() - state.lastInteraction > IDLE_AFTER_MS) return;
    state.active += 1;
    syncActiveField();
    if (Math.round(state.active) % 10 === 0) saveDraft();
  }, 1000);

  ["keydown", "mousedown", "wheel", "touchstart", "scroll"].forEach(function (name) {
    document.addEventListener(name, markActive, { passive: true, capture: true });
  });
  var lastMove = 0;
  document.addEventListener(
    "mousemove",
    function () {
      var now = Date.now();
      if (now - lastMove > 2000) {
        lastMove = now;
        markActive();
      }
    },
    { passive: true },
  );
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") markActive();
    else saveDraft();
  });

  // --- Set-up of a (new) panel ----------------------------------------------------

  function init() {
    state.form = document.querySelector("form[data-rating-form]");
    state.rows = state.form ? Array.prototype.slice.call(state.form.querySelectorAll("[data-skill-row]")) : [];
    state.active = 0;
    state.lastInteraction = Date.now();
    document.querySelectorAll("[data-help-open]").forEach(function (button) {
      button.hidden = false;
    });
    if (!state.form) return;
    restoreDraft();
    syncActiveField();
    // After an error, start at the first row the server complained about.
    var errorRow = state.form.querySelector(".skill-row.has-error");
    var start = errorRow ? state.rows.indexOf(errorRow) : 0;
    var skipBox = document.getElementById("skip-box");
    if (skipBox && skipBox.open) {
      setCurrent(start, false);
      openSkip();
    } else {
      setCurrent(start, true, !!errorRow);
    }
  }

  // --- Events ------------------------------------------------------------------------

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    var help = document.getElementById("rating-help");
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
        } else if (target.closest("[data-skill-row]")) {
          event.preventDefault();
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
    var readonly = !!state.form.querySelector("input.seg-input:disabled");
    var code = event.code || "";
    var digit = "";
    if (/^Numpad[0-5]$/.test(code)) digit = code.slice(-1);
    else if (/^[0-5]$/.test(event.key)) digit = event.key;
    if (digit && !readonly) {
      event.preventDefault();
      choose(digit === "0" ? "na" : digit);
      return;
    }
    switch (event.key) {
      case "n":
      case "N":
        if (readonly) return;
        event.preventDefault();
        choose("na");
        return;
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
        openRationale();
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
    }
  });

  document.addEventListener("focusin", function (event) {
    var row = event.target.closest && event.target.closest("[data-skill-row]");
    if (row && state.rows.indexOf(row) !== -1) setCurrent(state.rows.indexOf(row), false);
  });

  document.addEventListener("change", function (event) {
    if (!state.form || !state.form.contains(event.target)) return;
    saveDraft();
    if (event.target.matches("input.seg-input") && firstMissing() === -1) {
      hint("Every skill has a value. Press Enter to submit.");
    }
  });

  document.addEventListener("input", function (event) {
    if (state.form && state.form.contains(event.target)) saveDraftSoon();
  });

  // The submit button lives outside the form: check completeness for mouse users too.
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
        hint("Score “" + rowName(state.rows[missing]) + "” first (1-5 or N/A).");
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

  // The server accepted the scores (or the skip): the draft has served its purpose.
  // The key is taken when the request starts: by the time it ends, the next
  // assignment's panel may already be in the page.
  var pendingDraftKey = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.matches && elt.matches("form[data-rating-form], form[data-skip-form]")) {
      saveDraft();
      pendingDraftKey = draftKey();
    }
  });
  // (When the form was swapped out, htmx reports this event on an ancestor, with that
  // ancestor as `detail.elt`: hence the pending key rather than a check of the form.)
  document.addEventListener("htmx:afterRequest", function (event) {
    if (!pendingDraftKey) return;
    if (event.detail.successful && event.detail.xhr.status === 200) clearDraft(pendingDraftKey);
    pendingDraftKey = null;
  });

  function collapseGuidelines() {
    var guidelines = document.querySelector("details.guidelines[data-auto-open]");
    if (guidelines) {
      guidelines.open = false;
      guidelines.removeAttribute("data-auto-open");
    }
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    if (document.querySelector("#rating-panel .saved-flash")) collapseGuidelines();
    if (event.detail.elt && event.detail.elt.id === "rating-panel") init();
    else if (document.getElementById("rating-panel") && !document.body.contains(state.form)) init();
  });

  document.addEventListener("DOMContentLoaded", function () {
    pruneOldDrafts();
    init();
  });
  if (document.readyState !== "loading") {
    pruneOldDrafts();
    init();
  }
})();
