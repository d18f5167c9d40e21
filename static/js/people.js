// Workspace settings: a refused member change (400: the last owner, a bad role) comes
// back as the member table with the reason; htmx does not swap 4xx answers by
// default, so swap them in for the forms inside [data-swap-refusals].
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (event) {
    var elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (event.detail.xhr.status === 400 && elt && elt.closest && elt.closest("[data-swap-refusals]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
