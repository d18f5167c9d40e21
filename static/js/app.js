// FLASK Eval: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  // A failed htmx request would otherwise look like nothing happened. A refusal (403)
  // says why, in the words of the 403 page (e.g. a rater removed from the campaign).
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var reason = xhr.status === 403 ? refusalText(xhr.responseText) : "";
    showNotice(
      reason
        ? "Not allowed: " + reason
        : "The page could not be updated (HTTP " + xhr.status + "). Reload to try again.",
    );
  });

  function refusalText(html) {
    // DOMParser runs no script; only the text of the marked paragraph is used.
    var doc = new DOMParser().parseFromString(html || "", "text/html");
    var node = doc.querySelector("[data-refusal]");
    return node ? node.textContent.trim() : "";
  }
  document.addEventListener("htmx:sendError", function () {
    showNotice("The server could not be reached. Check your connection and reload.");
  });

  function showNotice(text) {
    var main = document.getElementById("main");
    if (!main) return;
    var notice = document.getElementById("htmx-error");
    if (!notice) {
      notice = document.createElement("p");
      notice.id = "htmx-error";
      notice.className = "notice notice-error";
      notice.setAttribute("role", "alert");
      main.prepend(notice);
    }
    notice.textContent = text;
  }

  // Highlight the help text of the chosen import format.
  function syncFormatHelp(select) {
    var items = document.querySelectorAll("[data-format-help]");
    items.forEach(function (item) {
      item.classList.toggle("is-selected", item.getAttribute("data-format-help") === select.value);
    });
  }
  document.addEventListener("change", function (event) {
    if (event.target.matches("select[data-format-select]")) syncFormatHelp(event.target);
  });
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.querySelector("select[data-format-select]");
    if (select) syncFormatHelp(select);
    setUpNavMenu();
  });

  // Narrow screens: a main navigation of FOLD_FROM_LINKS links or more (a researcher's,
  // an admin's) folds into a menu button (app.css shows the
  // button below 1440 px, only once this ran: without JavaScript the links wrap).
  // The button says whether the menu is open (aria-expanded); Esc closes it and gives
  // the focus back to the button, and so does a click elsewhere.
  var FOLD_FROM_LINKS = 5;

  function setUpNavMenu() {
    var toggle = document.querySelector("[data-nav-toggle]");
    var nav = document.querySelector("[data-nav]");
    if (!toggle || !nav) return;
    // A rater's two or three links fit beside the user block at any width: no menu.
    if (nav.querySelectorAll("li").length < FOLD_FROM_LINKS) return;
    document.documentElement.classList.add("has-nav-menu");

    function setOpen(open) {
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      nav.classList.toggle("is-open", open);
    }
    toggle.addEventListener("click", function () {
      var open = toggle.getAttribute("aria-expanded") !== "true";
      setOpen(open);
      if (open) {
        var first = nav.querySelector("a");
        if (first) first.focus();
      }
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && nav.classList.contains("is-open")) {
        setOpen(false);
        toggle.focus();
      }
    });
    document.addEventListener("click", function (event) {
      if (!nav.classList.contains("is-open")) return;
      if (nav.contains(event.target) || toggle.contains(event.target)) return;
      setOpen(false);
    });
  }
})();
