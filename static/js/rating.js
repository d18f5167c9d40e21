// FLASK Eval rating page (and the review of a rating): what rater.js leaves to it.
//
// - keys: 1-5 score the focused skill and move on, n / 0 = N/A; r opens the rationale
//   of the focused skill;
// - a draft in localStorage, keyed by assignment id (`data-draft` on the form), that
//   survives a reload and is removed once the server accepted the submit or skip.
//   Drafts older than DRAFT_MAX_AGE_MS are pruned on load.
FlaskRater.start(function (rater) {
  "use strict";

  var DRAFT_PREFIX = "rating-draft:";
  var DRAFT_MAX_AGE_MS = 14 * 24 * 3600 * 1000;
  var draftTimer = null;

  function storage() {
    try {
      return window.localStorage;
    } catch (e) {
      return null; // private mode or disabled: no drafts, everything else works
    }
  }

  function draftKey() {
    var form = rater.form();
    return form ? form.getAttribute("data-draft") : null;
  }

  function rowValue(row) {
    var checked = row.querySelector("input.seg-input:checked");
    return checked ? checked.value : "";
  }

  function collectDraft() {
    var draft = { savedAt: Date.now(), active: Math.round(rater.activeSeconds()), scores: {}, rationales: {} };
    rater.rows().forEach(function (row) {
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
    clearTimeout(draftTimer);
    draftTimer = setTimeout(saveDraft, 300);
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
    rater.setActiveSeconds(Number(draft.active) || 0);
    var restored = 0;
    rater.rows().forEach(function (row) {
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
    if (restored) rater.hint("Your draft was restored.");
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

  return {
    panelId: "rating-panel",
    form: "form[data-rating-form]",
    row: "[data-skill-row]",
    keys: { 1: "1", 2: "2", 3: "3", 4: "4", 5: "5", 0: "na", n: "na" },
    rowName: function (row) {
      return row.getAttribute("data-skill-name") || row.getAttribute("data-skill");
    },
    missingHint: function (name, byKeys) {
      return "Score “" + name + "” first (" + (byKeys ? "1-5 or n for N/A" : "1-5 or N/A") + ").";
    },
    complete: "Every skill has a value. Press Enter to submit.",
    openRationale: function (row) {
      var details = row.querySelector("details.rationale");
      var textarea = row.querySelector("textarea");
      if (!details || !textarea) return;
      details.open = true;
      textarea.focus();
    },
    onLoad: pruneOldDrafts,
    onInit: restoreDraft,
    onChange: saveDraft,
    onInput: saveDraftSoon,
    onActiveSecond: function (seconds) {
      if (Math.round(seconds) % 10 === 0) saveDraft();
    },
    onHidden: saveDraft,
  };
});
