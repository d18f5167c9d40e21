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

  // Issue 37: while an htmx request runs, what it will replace is marked busy
  // (aria-busy; app.css dims it after 300 ms), and a page-wide "Working…" indicator
  // stands in for a control that names none (hx-indicator). Polls (hx-trigger
  // "every ...") are background refreshes, not waits: they mark nothing.
  function isPoll(elt) {
    var trigger = elt && elt.getAttribute && elt.getAttribute("hx-trigger");
    return !!trigger && /(^|,)\s*every\s/.test(trigger);
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var target = event.detail.target;
    if (isPoll(elt) || !target || target === document.body) return;
    target.setAttribute("aria-busy", "true");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var target = event.detail.target;
    if (target && target.getAttribute("aria-busy") === "true") {
      target.removeAttribute("aria-busy");
    }
  });

  // A plain GET form of slow figures (data-working="#region"): submitting it loads a
  // new page; meanwhile its indicator shows and the old figures are marked busy.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-working]")) return;
    if (form.hasAttribute("hx-get") || form.hasAttribute("hx-post")) return;
    form.classList.add("htmx-request");
    document.querySelectorAll(form.getAttribute("data-working")).forEach(function (node) {
      node.setAttribute("aria-busy", "true");
    });
  });
  // Back from the browser's cache (the back button): nothing is loading any more.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form[data-working].htmx-request").forEach(function (f) {
      f.classList.remove("htmx-request");
    });
    document.querySelectorAll("[aria-busy='true']").forEach(function (node) {
      node.removeAttribute("aria-busy");
    });
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
  // A select that filters groups of choices (the experiment form's runs, grouped by
  // dataset): only the chosen value's group is shown; without JavaScript all are.
  function syncGroups(select) {
    var box = document.getElementById(select.getAttribute("data-group-filter"));
    if (!box) return;
    box.querySelectorAll("[data-group]").forEach(function (group) {
      var shown = group.getAttribute("data-group") === select.value;
      group.hidden = !shown;
      group.querySelectorAll("input").forEach(function (input) {
        if (!shown) input.checked = false;
      });
    });
  }
  document.addEventListener("change", function (event) {
    if (event.target.matches("select[data-format-select]")) syncFormatHelp(event.target);
    if (event.target.matches("select[data-group-filter]")) syncGroups(event.target);
    // The header's workspace switch: choosing a workspace switches (the button stays
    // for keyboards and pages without JavaScript).
    if (event.target.matches("select[data-autosubmit]") && event.target.form) {
      event.target.form.submit();
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.querySelector("select[data-format-select]");
    if (select) syncFormatHelp(select);
    document.querySelectorAll("select[data-group-filter]").forEach(syncGroups);
    setUpNavMenu();
  });

  // A main navigation of FOLD_FROM_LINKS links or more (a researcher's, an admin's)
  // folds into a menu button exactly when it does not fit in one row beside the
  // brand and the user block (checked on load and on every resize, so a long user
  // name or a larger font folds it too; without JavaScript the links wrap).
  // The button says whether the menu is open (aria-expanded); Esc closes it and gives
  // the focus back to the button, and so does a click elsewhere.
  var FOLD_FROM_LINKS = 5;

  function setUpNavMenu() {
    var toggle = document.querySelector("[data-nav-toggle]");
    var nav = document.querySelector("[data-nav]");
    if (!toggle || !nav) return;
    // A rater's two or three links fit beside the user block at any width: no menu.
    if (nav.querySelectorAll("li").length < FOLD_FROM_LINKS) return;
    var root = document.documentElement;
    root.classList.add("has-nav-menu");
    var brand = document.querySelector(".topbar .brand");
    var user = document.querySelector(".topbar .nav-user");
    var items = nav.querySelectorAll("li");

    function setOpen(open) {
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      nav.classList.toggle("is-open", open);
    }
    // One row: the first and the last link on the same line, and the user block on
    // the brand's line (the bar wraps whatever does not fit).
    function fitsOneRow() {
      var first = items[0].getBoundingClientRect();
      var last = items[items.length - 1].getBoundingClientRect();
      if (Math.abs(last.top - first.top) > 2) return false;
      if (!brand || !user) return true;
      return user.getBoundingClientRect().top < brand.getBoundingClientRect().bottom;
    }
    function fold() {
      var wasFolded = root.classList.contains("nav-folded");
      root.classList.remove("nav-folded");
      var folded = !fitsOneRow();
      root.classList.toggle("nav-folded", folded);
      if (wasFolded && !folded) setOpen(false);
    }
    fold();
    var pending = false;
    window.addEventListener("resize", function () {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(function () {
        pending = false;
        fold();
      });
    });
    // Web fonts or zoom can change the widths after load.
    if (document.fonts && document.fonts.ready) document.fonts.ready.then(fold);

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
