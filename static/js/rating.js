// FLASK Eval rating page (and the review of a rating): what rater.js leaves to it.
//
// - keys: 1-5 score the focused skill and move on, n / 0 = N/A; r opens the rationale
//   of the focused skill;
// - what a draft holds (rater.js keeps it, keyed by `data-draft` on the form): the
//   score and the rationale of each skill.
FlaskRater.start(function (rater) {
  "use strict";

  function rowValue(row) {
    var checked = row.querySelector("input.seg-input:checked");
    return checked ? checked.value : "";
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
    return draft;
  }

  function restoreDraft(draft) {
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
    return restored;
  }

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
    collectDraft: collectDraft,
    restoreDraft: restoreDraft,
  };
});
