// The rubric editor (annotation/rubric_edit.html): a form that builds the rubric next to
// its YAML text, line numbers on the text, and the server's problems marked in them.
//
// The form edits a JS model (our rubric file's mapping) and writes it back as YAML into
// the text area; every change of the text (typed or written here) is posted by htmx to
// the preview endpoint, the one validator, which answers with the problems or the
// raters' rating form and the rubric it read (data-rubric-model). When the text was
// typed, the form is rebuilt from that model, so the two stay in step both ways.
// Without this file the text area alone works as before (no gutter, no form).
(function () {
  "use strict";

  var RESERVED = /^(yes|no|y|n|true|false|on|off|null|~)$/i;
  var PLAIN = /^[A-Za-z][A-Za-z0-9 _.,()'\/-]*$/;
  var MAX_POINTS = 11;

  // --- YAML out ---------------------------------------------------------------------

  function q(value) {
    var text = String(value == null ? "" : value);
    if (PLAIN.test(text) && !RESERVED.test(text) && text.trim() === text) return text;
    return JSON.stringify(text); // a JSON string is a YAML double-quoted scalar
  }

  function num(value) {
    var text = String(value == null ? "" : value).trim();
    return /^-?\d+$/.test(text) ? text : q(text);
  }

  function toYaml(model) {
    var out = ["name: " + q(model.name)];
    if (model.description) out.push("description: " + q(model.description));
    if (model.groups.length) {
      out.push("groups:");
      model.groups.forEach(function (g) {
        out.push("  - {key: " + q(g.key) + ", name: " + q(g.name) + "}");
      });
    } else {
      out.push("groups: []");
    }
    if (!model.criteria.length) out.push("criteria: []");
    else out.push("criteria:");
    model.criteria.forEach(function (c) {
      out.push("  - key: " + q(c.key));
      out.push("    name: " + q(c.name));
      out.push("    group: " + q(c.group));
      out.push("    kind: " + c.kind);
      if (c.kind === "categorical") {
        out.push("    labels:");
        c.labels.forEach(function (l) {
          var line = "      - {key: " + q(l.key) + ", name: " + q(l.name);
          if (l.description) line += ", description: " + q(l.description);
          out.push(line + "}");
        });
      } else {
        out.push("    scale: {min: " + num(c.scale.min) + ", max: " + num(c.scale.max) + "}");
        var points = Object.keys(c.anchors).filter(function (p) { return c.anchors[p]; });
        points.sort(function (a, b) { return Number(a) - Number(b); });
        if (!points.length) out.push("    anchors: {}");
        else out.push("    anchors:");
        points.forEach(function (p) { out.push("      " + p + ": " + q(c.anchors[p])); });
      }
      out.push("    allow_na: " + (c.allow_na ? "true" : "false"));
      if (c.description) out.push("    description: " + q(c.description));
    });
    return out.join("\n") + "\n";
  }

  // --- the model --------------------------------------------------------------------

  function normalise(data) {
    return {
      name: data.name || "",
      description: data.description || "",
      groups: (data.groups || []).map(function (g) { return { key: g.key, name: g.name }; }),
      criteria: (data.criteria || []).map(function (c) {
        return {
          key: c.key || "",
          name: c.name || "",
          group: c.group || "",
          kind: c.kind === "categorical" ? "categorical" : "ordinal",
          scale: c.scale ? { min: c.scale.min, max: c.scale.max } : { min: 1, max: 5 },
          anchors: Object.assign({}, c.anchors || {}),
          labels: (c.labels || []).map(function (l) {
            return { key: l.key, name: l.name || l.key, description: l.description || "" };
          }),
          allow_na: c.allow_na !== false,
          description: c.description || "",
        };
      }),
    };
  }

  function freeKey(model, stem) {
    var keys = model.criteria.map(function (c) { return c.key; });
    for (var i = model.criteria.length + 1; ; i++) {
      if (keys.indexOf(stem + "_" + i) < 0) return stem + "_" + i;
    }
  }

  function newCriterion(model, kind) {
    var group = model.groups.length ? model.groups[0].key : "";
    var c = {
      key: freeKey(model, kind === "yesno" ? "question" : "criterion"),
      name: kind === "yesno" ? "A yes / no question" : "A new criterion",
      group: group, kind: kind === "ordinal" ? "ordinal" : "categorical",
      scale: { min: 1, max: 5 }, anchors: {}, labels: [], allow_na: true, description: "",
    };
    if (kind === "ordinal") c.anchors = { 1: "Poor.", 5: "Excellent." };
    else if (kind === "yesno") c.labels = [{ key: "yes", name: "Yes", description: "" }, { key: "no", name: "No", description: "" }];
    else c.labels = [{ key: "a", name: "A", description: "" }, { key: "b", name: "B", description: "" }];
    return c;
  }

  // --- the form ---------------------------------------------------------------------

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") node.textContent = attrs[name];
      else if (attrs[name] === true) node.setAttribute(name, "");
      else if (attrs[name] !== false && attrs[name] != null) node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach(function (child) { if (child) node.appendChild(child); });
    return node;
  }

  // One labelled input bound to a path of the model ("criteria.0.name").
  function input(path, label, value, opts) {
    opts = opts || {};
    var id = "b-" + path.replace(/\./g, "-");
    var field = el(opts.tag || "input", {
      id: id, "data-path": path, type: opts.tag ? null : (opts.type || "text"),
      min: opts.min, max: opts.max, class: opts.cls || null,
      "data-structural": opts.structural ? "1" : null,
    });
    if (opts.tag === "select") {
      opts.options.forEach(function (o) {
        var option = el("option", { value: o[0], text: o[1] });
        if (String(o[0]) === String(value)) option.selected = true;
        field.appendChild(option);
      });
    } else if (opts.type === "checkbox") {
      field.checked = !!value;
    } else {
      field.value = value == null ? "" : value;
    }
    var wrap = el("div", { class: "b-field" + (opts.type === "checkbox" ? " b-check" : "") });
    var lab = el("label", { for: id, text: label });
    if (opts.type === "checkbox") { wrap.appendChild(field); wrap.appendChild(lab); }
    else { wrap.appendChild(lab); wrap.appendChild(field); }
    return wrap;
  }

  function button(text, action, path, cls) {
    return el("button", { type: "button", class: "btn btn-small " + (cls || "btn-secondary"), "data-action": action, "data-path": path, text: text });
  }

  function renderCriterion(model, c, i) {
    var p = "criteria." + i;
    var groups = model.groups.map(function (g) { return [g.key, g.name || g.key]; });
    if (c.group && !model.groups.some(function (g) { return g.key === c.group; })) groups.push([c.group, c.group + " (not a group)"]);
    var kind = c.kind === "categorical" ? (isYesNo(c) ? "yesno" : "categorical") : "ordinal";
    var body = [
      el("div", { class: "b-row" }, [
        input(p + ".key", "Key", c.key, { cls: "mono" }),
        input(p + ".name", "Name", c.name),
      ]),
      el("div", { class: "b-row" }, [
        input(p + ".kind", "Kind", kind, { tag: "select", structural: true, options: [["ordinal", "Score scale"], ["yesno", "Yes / no"], ["categorical", "Labels"]] }),
        input(p + ".group", "Group", c.group, { tag: "select", options: groups.length ? groups : [["", "(add a group)"]] }),
        input(p + ".allow_na", "N/A allowed", c.allow_na, { type: "checkbox" }),
      ]),
      input(p + ".description", "What raters judge", c.description, { tag: "textarea" }),
    ];
    if (c.kind === "ordinal") {
      body.push(el("div", { class: "b-row" }, [
        input(p + ".scale.min", "Lowest score", c.scale.min, { type: "number", min: -1000, max: 1000, structural: true }),
        input(p + ".scale.max", "Highest score", c.scale.max, { type: "number", min: -1000, max: 1000, structural: true }),
      ]));
      var low = Number(c.scale.min), high = Number(c.scale.max);
      if (Number.isInteger(low) && Number.isInteger(high) && high > low && high - low + 1 <= MAX_POINTS) {
        var anchors = el("fieldset", { class: "b-anchors" }, [el("legend", { text: "Anchors: what each score means (both ends at least)" })]);
        for (var v = low; v <= high; v++) anchors.appendChild(input(p + ".anchors." + v, String(v), c.anchors[v] || ""));
        body.push(anchors);
      } else {
        body.push(el("p", { class: "muted small", text: "Give a scale of 2 to " + MAX_POINTS + " whole points to write its anchors." }));
      }
    } else {
      var labels = el("fieldset", { class: "b-labels" }, [el("legend", { text: "Labels (2 to 10)" })]);
      c.labels.forEach(function (l, j) {
        labels.appendChild(el("div", { class: "b-row" }, [
          input(p + ".labels." + j + ".key", "Key", l.key, { cls: "mono" }),
          input(p + ".labels." + j + ".name", "Name", l.name),
          button("Remove", "remove-label", p + ".labels." + j),
        ]));
      });
      labels.appendChild(button("Add a label", "add-label", p));
      body.push(labels);
    }
    var head = el("div", { class: "b-head" }, [
      el("h3", { class: "b-title", text: (i + 1) + ". " + (c.name || c.key || "Criterion") }),
      button("Up", "move-up", p), button("Down", "move-down", p), button("Remove", "remove-criterion", p),
    ]);
    return el("section", { class: "b-criterion", "data-criterion": String(i) }, [head].concat(body));
  }

  function isYesNo(c) {
    return c.labels.length === 2 && c.labels[0].key === "yes" && c.labels[1].key === "no";
  }

  function render(state) {
    var model = state.model, root = state.body;
    var focused = document.activeElement && document.activeElement.id;
    root.textContent = "";
    if (!state.fixedName) root.appendChild(input("name", "Rubric name", model.name));
    root.appendChild(input("description", "Description", model.description));
    var groups = el("fieldset", { class: "b-groups" }, [el("legend", { text: "Groups" })]);
    model.groups.forEach(function (g, j) {
      groups.appendChild(el("div", { class: "b-row" }, [
        input("groups." + j + ".key", "Key", g.key, { cls: "mono", structural: true }),
        input("groups." + j + ".name", "Name", g.name, { structural: true }),
        button("Remove", "remove-group", "groups." + j),
      ]));
    });
    groups.appendChild(button("Add a group", "add-group", "groups"));
    root.appendChild(groups);
    var list = el("div", { class: "b-criteria" });
    model.criteria.forEach(function (c, i) { list.appendChild(renderCriterion(model, c, i)); });
    root.appendChild(list);
    root.appendChild(el("div", { class: "b-add" }, [
      button("Add a score scale", "add-ordinal", "criteria", "btn-secondary"),
      button("Add a yes / no question", "add-yesno", "criteria", "btn-secondary"),
      button("Add a set of labels", "add-categorical", "criteria", "btn-secondary"),
    ]));
    if (focused) {
      var again = document.getElementById(focused);
      if (again && root.contains(again)) again.focus();
    }
  }

  function setPath(model, path, value) {
    var parts = path.split(".");
    var target = model;
    for (var i = 0; i < parts.length - 1; i++) target = target[parts[i]];
    target[parts[parts.length - 1]] = value;
  }

  function getPath(model, path) {
    return path.split(".").reduce(function (t, k) { return t[k]; }, model);
  }

  function onField(state, field) {
    var path = field.getAttribute("data-path");
    var value = field.type === "checkbox" ? field.checked : field.value;
    var m = /^criteria\.(\d+)\.kind$/.exec(path);
    if (m) {
      var c = state.model.criteria[Number(m[1])];
      if (value === "ordinal") {
        c.kind = "ordinal";
        if (!Object.keys(c.anchors).length) c.anchors = { 1: "Poor.", 5: "Excellent." };
      } else {
        var fresh = newCriterion(state.model, value);
        c.kind = "categorical";
        c.labels = fresh.labels;
      }
    } else if (/^groups\.\d+\.key$/.test(path)) {
      var g = getPath(state.model, path.replace(/\.key$/, ""));
      state.model.criteria.forEach(function (c) { if (c.group === g.key) c.group = value; });
      g.key = value;
    } else {
      setPath(state.model, path, value);
    }
  }

  function onAction(state, action, path) {
    var model = state.model;
    var parts = path.split(".");
    var i = Number(parts[1]);
    if (action === "add-group") {
      var n = model.groups.length + 1;
      model.groups.push({ key: "group_" + n, name: "Group " + n });
    } else if (action === "remove-group") {
      model.groups.splice(i, 1);
    } else if (action.indexOf("add-") === 0 && path === "criteria") {
      model.criteria.push(newCriterion(model, action.slice(4)));
    } else if (action === "remove-criterion") {
      model.criteria.splice(i, 1);
    } else if (action === "move-up" && i > 0) {
      model.criteria.splice(i - 1, 0, model.criteria.splice(i, 1)[0]);
    } else if (action === "move-down" && i < model.criteria.length - 1) {
      model.criteria.splice(i + 1, 0, model.criteria.splice(i, 1)[0]);
    } else if (action === "add-label") {
      var labels = model.criteria[i].labels;
      labels.push({ key: "label_" + (labels.length + 1), name: "Label " + (labels.length + 1), description: "" });
    } else if (action === "remove-label") {
      model.criteria[i].labels.splice(Number(parts[3]), 1);
    }
  }

  // --- the text area: gutter, writing, problems ------------------------------------

  function gutter(state) {
    var count = state.text.value.split("\n").length;
    var marked = state.problemLines;
    if (count !== state.lines || state.marked !== marked.join(" ")) {
      state.gutter.textContent = "";
      for (var n = 1; n <= count; n++) {
        var line = el("span", { text: String(n) });
        if (marked.indexOf(n) >= 0) line.className = "has-problem";
        state.gutter.appendChild(line);
      }
      state.lines = count;
      state.marked = marked.join(" ");
    }
    state.gutter.scrollTop = state.text.scrollTop;
  }

  function writeText(state) {
    state.text.value = toYaml(state.model);
    state.source = "form";
    gutter(state);
    state.text.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function onPreview(state, preview) {
    var lines = (preview.getAttribute("data-problem-lines") || "").split(" ").filter(Boolean).map(Number);
    state.problemLines = lines;
    gutter(state);
    var raw = preview.getAttribute("data-rubric-model");
    if (raw) {
      state.note.textContent = "";
      if (state.source === "text") {
        state.model = normalise(JSON.parse(raw));
        render(state);
      }
    } else if (state.source === "text") {
      state.note.textContent = "The text has problems (listed in the preview): the form shows the last rubric without problems, and changing it rewrites the text.";
    }
  }

  function start() {
    var builder = document.querySelector("[data-rubric-builder]");
    var text = document.getElementById("rubric-text");
    var preview = document.querySelector("[data-rubric-preview]");
    if (!builder || !text || !preview) return;
    var state = {
      builder: builder, body: builder.querySelector("[data-builder-body]"),
      note: builder.querySelector("[data-builder-note]"), text: text,
      gutter: document.querySelector("[data-gutter]"), fixedName: builder.hasAttribute("data-fixed-name"),
      model: null, source: "text", lines: 0, marked: "", problemLines: [],
    };
    state.gutter.hidden = false;
    state.text.closest("[data-code-editor]").classList.add("has-gutter");
    var raw = preview.getAttribute("data-rubric-model");
    state.model = normalise(raw ? JSON.parse(raw) : { groups: [], criteria: [] });
    if (!raw) state.note.textContent = "The text has problems (listed in the preview); the form starts empty and changing it rewrites the text.";
    render(state);
    builder.hidden = false;
    onPreview(state, preview);

    text.addEventListener("input", function (event) {
      if (event.isTrusted) state.source = "text";
      gutter(state);
    });
    text.addEventListener("scroll", function () { state.gutter.scrollTop = text.scrollTop; });
    state.body.addEventListener("input", function (event) {
      var field = event.target.closest("[data-path]");
      if (!field || field.tagName === "BUTTON" || field.hasAttribute("data-structural") || field.tagName === "SELECT") return;
      onField(state, field);
      writeText(state);
    });
    state.body.addEventListener("change", function (event) {
      var field = event.target.closest("[data-path]");
      if (!field || field.tagName === "BUTTON") return;
      onField(state, field);
      if (field.hasAttribute("data-structural") || field.tagName === "SELECT") render(state);
      writeText(state);
    });
    state.body.addEventListener("click", function (event) {
      var btn = event.target.closest("button[data-action]");
      if (!btn) return;
      onAction(state, btn.getAttribute("data-action"), btn.getAttribute("data-path"));
      render(state);
      writeText(state);
    });
    // htmx:load fires on the new preview after each swap (outerHTML: the old one is
    // gone, so its own events never reach the document).
    document.body.addEventListener("htmx:load", function (event) {
      if (event.target.matches && event.target.matches("[data-rubric-preview]")) onPreview(state, event.target);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
