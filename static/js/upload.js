// The upload page (annotation/upload_new.html): drag and drop onto the drop zone, the
// file read as soon as it is chosen, and only the fields of the chosen import kind
// shown. Every part works without this file: a plain file input and a submit button,
// and all fields shown with their help.
(function () {
  "use strict";

  function submit(form) {
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  }

  document.addEventListener("dragover", function (event) {
    var zone = event.target.closest && event.target.closest("[data-drop-zone]");
    if (!zone) return;
    event.preventDefault();
    zone.classList.add("is-dragover");
  });
  document.addEventListener("dragleave", function (event) {
    var zone = event.target.closest && event.target.closest("[data-drop-zone]");
    if (zone) zone.classList.remove("is-dragover");
  });
  document.addEventListener("drop", function (event) {
    var zone = event.target.closest && event.target.closest("[data-drop-zone]");
    if (!zone) return;
    event.preventDefault();
    zone.classList.remove("is-dragover");
    var input = zone.querySelector("[data-upload-input]");
    var files = event.dataTransfer && event.dataTransfer.files;
    if (!input || !files || !files.length) return;
    input.files = files;
    submit(input.form);
  });
  document.addEventListener("change", function (event) {
    if (event.target.matches("[data-upload-input]") && event.target.files.length) {
      submit(event.target.form);
    }
    if (event.target.matches("#upload-choice-form select")) syncKind();
  });

  // Offer the chosen kind's formats and show the fields it reads (data-kinds and
  // data-upload-for list the kinds, data-upload-formats the formats).
  function syncKind() {
    var select = document.querySelector("#upload-choice-form select[name=kind]");
    var format = document.querySelector("#upload-choice-form [data-upload-format]");
    if (!select || !format) return;
    var kind = select.value;
    var firstFit = null;
    Array.prototype.forEach.call(format.options, function (option) {
      var fits = option.getAttribute("data-kinds").split(" ").indexOf(kind) !== -1;
      option.hidden = !fits;
      option.disabled = !fits;
      if (fits && firstFit === null) firstFit = option;
    });
    if (format.selectedOptions.length && format.selectedOptions[0].disabled && firstFit) {
      firstFit.selected = true;
    }
    document.querySelectorAll("[data-upload-for]").forEach(function (field) {
      var kinds = field.getAttribute("data-upload-for").split(" ");
      var formats = field.getAttribute("data-upload-formats");
      field.hidden =
        kinds.indexOf(kind) === -1 ||
        (formats !== null && formats.split(" ").indexOf(format.value) === -1);
    });
  }
  document.addEventListener("DOMContentLoaded", syncKind);
  document.addEventListener("htmx:afterSwap", syncKind);

  // A refused step (400) answers the step with its problems: show it, not an error.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (event.detail.xhr.status === 400 && target && target.id === "upload-step") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
