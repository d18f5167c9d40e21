// FLASK Eval pairwise comparison page: what rater.js leaves to it.
//
// - keys: a / 1 = A better, b / 2 = B better, t / 3 = tie, for the focused question
//   (overall first, then each skill), then focus moves on; r = the one rationale of
//   the pair.
FlaskRater.start(function () {
  "use strict";

  return {
    panelId: "pairwise-panel",
    form: "form[data-pairwise-form]",
    row: "[data-label-row]",
    keys: { a: "A", 1: "A", b: "B", 2: "B", t: "tie", 3: "tie" },
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
  };
});
