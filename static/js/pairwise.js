// FLASK Eval pairwise comparison page: what rater.js leaves to it.
//
// - keys: a / 1 = A better, t / 2 = tie, b / 3 = B better (digits in the buttons'
//   left-to-right order: A | Tie | B), for the focused question
//   (overall first, then each skill), then focus moves on; r = the one rationale of
//   the pair.
FlaskRater.start(function () {
  "use strict";

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
  };
});
