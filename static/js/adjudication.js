/* The settle page's keyboard (issue 37, defect 26), documented on the page itself
   (#adjudication-keys): j / k move between the criteria's forms, 1-9 choose the n-th
   value of the current one and move to its note, Enter in the note settles, n opens
   the next response to settle. Keys typed into the note are left alone. */
(function () {
  "use strict";

  function forms() {
    return Array.prototype.slice.call(
      document.querySelectorAll(".adjudication-form")
    ).filter(function (form) {
      // A form inside a closed "Settle anyway" box is not reachable by j / k.
      var box = form.closest("details");
      return !box || box.open;
    });
  }

  function currentIndex(list) {
    var active = document.activeElement;
    for (var i = 0; i < list.length; i++) {
      if (list[i].contains(active)) return i;
    }
    return -1;
  }

  function focusForm(form) {
    var select = form.querySelector("select[name=score]");
    if (select) {
      select.focus();
      form.closest("section").scrollIntoView({ block: "nearest" });
    }
  }

  function typing(target) {
    return (
      target &&
      (target.tagName === "TEXTAREA" ||
        (target.tagName === "INPUT" && target.type !== "hidden") ||
        target.isContentEditable)
    );
  }

  document.addEventListener("DOMContentLoaded", function () {
    var list = forms();
    if (list.length) focusForm(list[0]);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    var list = forms();
    var index = currentIndex(list);
    if (event.key === "j" || event.key === "k") {
      if (!list.length) return;
      event.preventDefault();
      var step = event.key === "j" ? 1 : -1;
      var next = index < 0 ? 0 : (index + step + list.length) % list.length;
      focusForm(list[next]);
    } else if (/^[1-9]$/.test(event.key)) {
      var form = list[index < 0 ? 0 : index];
      if (!form) return;
      var select = form.querySelector("select[name=score]");
      var options = Array.prototype.filter.call(select.options, function (o) {
        return o.value !== "";
      });
      var chosen = options[Number(event.key) - 1];
      if (!chosen) return;
      event.preventDefault();
      select.value = chosen.value;
      var note = form.querySelector("input[name=note]");
      if (note) note.focus();
    } else if (event.key === "n") {
      var link = document.getElementById("next-open");
      if (link) {
        event.preventDefault();
        window.location.assign(link.href);
      }
    }
  });
})();
