/* Concord workbench: keyboard shortcuts, drafts kept in the browser, timings and SPA exposure.
   Loaded after htmx; no inline handlers (CSP). Works on the server-rendered task form. */
(function () {
  "use strict";

  var DRAFT_PREFIX = "concord.draft.";
  var DRAFT_MAX_AGE_MS = 7 * 24 * 3600 * 1000;
  var UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  var TYPING = /^(text|number|search|email|password|url|tel)$/;

  document.documentElement.classList.add("js");

  var task = null; // the task on screen: {form, token, startedAt, activeMs, activeSince, exposure, observer}

  function now() { return Date.now(); }
  function visible() { return document.visibilityState === "visible"; }
  function byId(id) { return document.getElementById(id); }
  function hidden(form, name) { return form.querySelector('input[type="hidden"][name="' + name + '"]'); }

  // ---- messages ------------------------------------------------------------------------------

  function showAlert(text, action) {
    var box = byId("wb-alert");
    if (!box) return;
    box.textContent = text;
    if (action) box.appendChild(action);
    box.hidden = false;
    if (action && action.focus) action.focus();
  }

  function clearAlert() {
    var box = byId("wb-alert");
    if (box) { box.hidden = true; box.textContent = ""; }
  }

  function notice(text) {
    var box = byId("wb-status");
    if (!box) return;
    var p = document.createElement("p");
    p.className = "wb-notice";
    p.textContent = text;
    box.replaceChildren(p);
  }

  // ---- active time and exposure --------------------------------------------------------------

  function activeMs() {
    if (!task) return 0;
    return task.activeMs + (task.activeSince !== null ? now() - task.activeSince : 0);
  }

  function exposureOf(index) {
    var item = task.exposure[index];
    if (!item) item = task.exposure[index] = { ms: 0, seen: false, inView: false, since: null };
    return item;
  }

  function stopExposure(item) {
    if (item.since !== null) { item.ms += now() - item.since; item.since = null; }
  }

  function pause() {
    if (!task) return;
    if (task.activeSince !== null) { task.activeMs += now() - task.activeSince; task.activeSince = null; }
    Object.keys(task.exposure).forEach(function (k) { stopExposure(task.exposure[k]); });
  }

  function resume() {
    if (!task || !visible()) return;
    if (task.activeSince === null) task.activeSince = now();
    Object.keys(task.exposure).forEach(function (k) {
      var item = task.exposure[k];
      if (item.inView && item.since === null) { item.since = now(); item.seen = true; }
    });
  }

  function observeExposure(form) {
    var targets = form.querySelectorAll("[data-exposure]");
    if (!targets.length || !("IntersectionObserver" in window)) return null;
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        var item = exposureOf(entry.target.getAttribute("data-exposure"));
        var tall = entry.intersectionRect.height >= 0.5 * window.innerHeight;
        var inView = entry.isIntersecting && (entry.intersectionRatio >= 0.5 || tall);
        if (inView && !item.inView) {
          item.inView = true;
          if (visible()) { item.since = now(); item.seen = true; }
        } else if (!inView && item.inView) {
          item.inView = false;
          stopExposure(item);
        }
      });
    }, { threshold: [0, 0.25, 0.5, 0.75, 1] });
    targets.forEach(function (el) { exposureOf(el.getAttribute("data-exposure")); observer.observe(el); });
    return observer;
  }

  function exposureReport() {
    var outputs = {};
    Object.keys(task.exposure).forEach(function (k) {
      var item = task.exposure[k];
      outputs[k] = { ms: Math.round(item.ms + (item.since !== null ? now() - item.since : 0)), seen: item.seen };
    });
    return JSON.stringify({ outputs: outputs });
  }

  // ---- drafts --------------------------------------------------------------------------------

  function readDraft(token) {
    try {
      var draft = JSON.parse(localStorage.getItem(DRAFT_PREFIX + token) || "null");
      return draft && draft.v === 1 ? draft : null;
    } catch (e) { return null; }
  }

  function dropDraft(token) {
    try { localStorage.removeItem(DRAFT_PREFIX + token); } catch (e) { /* storage unavailable */ }
  }

  function answerFields(form) {
    var fields = {};
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || el.name.charAt(0) === "_" || el.name === "csrfmiddlewaretoken") return;
      if (el.type === "radio" || el.type === "checkbox") { if (el.checked) fields[el.name] = el.value; }
      else if (el.type !== "hidden" && el.type !== "submit" && el.value !== "") fields[el.name] = el.value;
    });
    return fields;
  }

  function saveDraft() {
    if (!task) return;
    var fields = answerFields(task.form);
    if (!Object.keys(fields).length) return;
    var draft = {
      v: 1,
      key: hidden(task.form, "_key").value,
      rendered: hidden(task.form, "_rendered").value,
      startedAt: task.startedAt,
      activeMs: activeMs(),
      fields: fields,
      savedAt: now()
    };
    try { localStorage.setItem(DRAFT_PREFIX + task.token, JSON.stringify(draft)); } catch (e) { /* full or off */ }
  }

  function restoreDraft() {
    var draft = readDraft(task.token);
    if (!draft) return;
    var form = task.form;
    var restored = false;
    Object.keys(draft.fields || {}).forEach(function (name) {
      var value = String(draft.fields[name]);
      var field = form.elements.namedItem(name);
      if (!field) return;
      if (field.tagName === undefined || field.type === "radio") { // a radio group (RadioNodeList)
        var group = field.tagName === undefined ? Array.prototype.slice.call(field) : [field];
        if (group.some(function (r) { return r.checked; })) return; // the server's value wins
        group.forEach(function (r) { if (r.value === value) { r.checked = true; restored = true; } });
      } else if (field.value === "") {
        field.value = value;
        field.dispatchEvent(new Event("input", { bubbles: true }));
        restored = true;
      }
    });
    // The same answer keeps the same key, so it is stored once however often it is sent.
    if (draft.key && UUID.test(draft.key)) hidden(form, "_key").value = draft.key;
    if (draft.rendered) hidden(form, "_rendered").value = draft.rendered;
    if (draft.startedAt) task.startedAt = Math.min(task.startedAt, draft.startedAt);
    task.activeMs += draft.activeMs || 0;
    if (restored) notice("Your unsaved answer to this task was restored.");
  }

  function pruneDrafts() {
    try {
      for (var i = localStorage.length - 1; i >= 0; i--) {
        var k = localStorage.key(i);
        if (k && k.indexOf(DRAFT_PREFIX) === 0) {
          var d = readDraft(k.slice(DRAFT_PREFIX.length));
          if (!d || now() - (d.savedAt || 0) > DRAFT_MAX_AGE_MS) localStorage.removeItem(k);
        }
      }
    } catch (e) { /* storage unavailable */ }
  }

  // ---- sliders -------------------------------------------------------------------------------

  function syncSliders(form) {
    form.querySelectorAll("input[type=range][data-sync]").forEach(function (slider) {
      var number = byId(slider.getAttribute("data-sync"));
      if (!number) return;
      var fromNumber = function () {
        var v = parseFloat(number.value);
        if (isFinite(v) && v >= 0 && v <= 100) { slider.value = String(v); slider.classList.remove("wb-unset"); }
        else slider.classList.add("wb-unset");
      };
      fromNumber();
      slider.addEventListener("input", function () {
        number.value = slider.value;
        slider.classList.remove("wb-unset");
        saveDraft();
      });
      number.addEventListener("input", fromNumber);
    });
  }

  // ---- the task on screen --------------------------------------------------------------------

  function initTask() {
    var form = byId("task-form");
    if (task && task.observer) task.observer.disconnect();
    if (!form) {
      task = null;
      var first = document.querySelector("#task [data-focus-first]");
      if (first) first.focus();
      return;
    }
    var token = form.getAttribute("data-assignment");
    var same = task && task.token === token; // a refused answer comes back on the same task
    var previous = task;
    task = {
      form: form,
      token: token,
      startedAt: same ? previous.startedAt : now(),
      activeMs: same ? activeMs() : 0,
      activeSince: visible() ? now() : null,
      exposure: same ? previous.exposure : {},
      observer: null
    };
    if (same) Object.keys(task.exposure).forEach(function (k) { stopExposure(task.exposure[k]); task.exposure[k].inView = false; });
    if (!same) restoreDraft();
    syncSliders(form);
    task.observer = observeExposure(form);
    form.addEventListener("input", saveDraft);
    form.addEventListener("change", saveDraft);
    var invalid = form.querySelector("[aria-invalid=true]");
    var target = invalid || form.querySelector("[data-focus-first]") || byId("task-title");
    if (target) target.focus({ preventScroll: !invalid });
  }

  // Fill in the timings just before the form goes (htmx or a plain post), and keep the answer.
  document.addEventListener("submit", function (e) {
    if (!task || e.target !== task.form) return;
    var form = task.form;
    hidden(form, "_duration_ms").value = String(Math.max(0, now() - task.startedAt));
    hidden(form, "_active_ms").value = String(Math.round(activeMs()));
    if (Object.keys(task.exposure).length) hidden(form, "_exposure").value = exposureReport();
    saveDraft();
  }, true);

  // ---- htmx responses ------------------------------------------------------------------------

  document.addEventListener("htmx:beforeOnLoad", function (e) {
    var xhr = e.detail.xhr;
    if (!xhr || !task || e.detail.elt !== task.form) return;
    if (xhr.status === 401) {
      // Signed out: say so here instead of following the redirect; the draft is already saved.
      e.preventDefault();
      var link = document.createElement("a");
      var to = xhr.getResponseHeader("HX-Redirect") || "";
      link.href = to.charAt(0) === "/" && to.charAt(1) !== "/" ? to : "/accounts/login/";
      link.className = "button";
      link.textContent = "Sign in again";
      showAlert("Your session has expired. Sign in again to continue; your answer is kept in this browser.", link);
    } else if (xhr.status === 403) {
      e.preventDefault();
      var reload = document.createElement("button");
      reload.type = "button";
      reload.textContent = "Reload";
      reload.addEventListener("click", function () { window.location.reload(); });
      showAlert("Your session changed (signed in or out in another tab). Reload to continue; your answer is kept.", reload);
    }
  });

  document.addEventListener("htmx:responseError", function (e) {
    if (!task || e.detail.elt !== task.form) return;
    showAlert("The answer could not be saved (error " + e.detail.xhr.status + "). It is kept in this browser; press Enter to try again.");
  });

  document.addEventListener("htmx:sendError", function (e) {
    if (!task || e.detail.elt !== task.form) return;
    showAlert("The server could not be reached. Your answer is kept in this browser; press Enter to try again.");
  });

  document.addEventListener("htmx:afterSwap", function (e) {
    if (!e.detail.target || e.detail.target.id !== "task") return;
    var old = task ? task.token : null;
    var fresh = byId("task-form");
    if (old && (!fresh || fresh.getAttribute("data-assignment") !== old)) dropDraft(old);
    clearAlert();
    initTask();
  });

  // ---- keyboard ------------------------------------------------------------------------------

  function keyName(e) { return e.key.length === 1 ? e.key.toLowerCase() : e.key; }

  function guidePanel() { return byId("wb-guide"); }

  function toggleGuide(open) {
    var panel = guidePanel();
    if (!panel) return false;
    var show = open === undefined ? panel.hidden : open;
    panel.hidden = !show;
    document.querySelectorAll("[data-guide-toggle]").forEach(function (b) { b.setAttribute("aria-expanded", String(show)); });
    if (show) {
      panel.focus();
      if (window.htmx) window.htmx.ajax("GET", panel.getAttribute("data-guide-url"), { target: "#wb-guide", swap: "innerHTML" });
    }
    else {
      var toggle = document.querySelector("[data-guide-toggle]");
      if (toggle) toggle.focus();
    }
    return true;
  }

  document.addEventListener("click", function (e) {
    var toggle = e.target.closest && e.target.closest("[data-guide-toggle]");
    if (toggle && toggleGuide()) { e.preventDefault(); return; }
    if (e.target.closest && e.target.closest("[data-guide-close]")) toggleGuide(false);
  });

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var t = e.target;
    var panel = guidePanel();
    var guideOpen = panel && !panel.hidden;
    if (e.key === "Escape" && guideOpen) { e.preventDefault(); toggleGuide(false); return; }
    var typing = t && (t.tagName === "TEXTAREA" || t.isContentEditable ||
      (t.tagName === "INPUT" && TYPING.test(t.type)));
    var form = task && task.form;
    if (e.key === "Enter") {
      if (!form || guideOpen || e.shiftKey) return;
      if (t && (t.tagName === "BUTTON" || t.tagName === "A" || t.tagName === "SUMMARY" || t.tagName === "TEXTAREA")) return;
      if (t !== document.body && !form.contains(t)) return;
      e.preventDefault();
      if (e.repeat) return;
      form.requestSubmit();
      return;
    }
    if (typing) return;
    if (keyName(e) === "g" && panel) { e.preventDefault(); toggleGuide(); return; }
    if (!form || guideOpen) return;
    var scope = (t && t.closest && t.closest("[data-shortcut-scope]")) || form;
    var name = keyName(e);
    var matches = Array.prototype.filter.call(scope.querySelectorAll("input[data-keys]"), function (input) {
      return input.getAttribute("data-keys").split(" ").indexOf(name) >= 0;
    });
    if (matches.length !== 1) return;
    e.preventDefault();
    matches[0].checked = true;
    matches[0].focus();
    matches[0].dispatchEvent(new Event("change", { bubbles: true }));
  });

  // ---- page life -----------------------------------------------------------------------------

  document.addEventListener("visibilitychange", function () {
    if (visible()) resume(); else { pause(); saveDraft(); }
  });
  window.addEventListener("pagehide", saveDraft);
  // A page restored from the back/forward cache holds a stale task: fetch the current one.
  window.addEventListener("pageshow", function (e) { if (e.persisted && byId("task")) window.location.reload(); });

  pruneDrafts();
  initTask();
  var begin = document.querySelector(".wb-begin");
  if (begin && !task) begin.focus();
})();

/* ---- SPA batch page (task_spa.html) --------------------------------------------------------- */
/* The SPA batch page: live progress counts, prompt groups that fold away once every story in
   them is rated (and open again on request), and the questions in reach. Runs after the
   workbench above (which keeps timings, drafts and the exposure record); without JavaScript
   every group stays open and the form works as before. */
(function () {
  "use strict";

  function ratingGroups(root) { return root.querySelectorAll("[data-spa-rating]"); }

  function isRated(fieldset) { return !!fieldset.querySelector("input[type=radio]:checked"); }

  function isAnswered(input) {
    var v = input.value.trim();
    if (v === "") return false;
    var n = Number(v);
    return isFinite(n) && n >= 0 && n <= 100;
  }

  function groupState(group) {
    var ratings = ratingGroups(group);
    var rated = 0;
    ratings.forEach(function (f) { if (isRated(f)) rated += 1; });
    return { total: ratings.length, rated: rated, complete: ratings.length > 0 && rated === ratings.length };
  }

  function setCollapsed(group, collapsed) {
    var body = group.querySelector(".wb-spa-group-body");
    var toggle = group.querySelector("[data-spa-toggle]");
    if (!body || !toggle) return;
    body.hidden = collapsed;
    group.classList.toggle("is-collapsed", collapsed);
    toggle.setAttribute("aria-expanded", String(!collapsed));
    toggle.textContent = collapsed ? "Show" : "Fold";
    // Open groups keep the Tab path rating -> rating; a folded group's button is reachable.
    toggle.tabIndex = collapsed ? 0 : -1;
  }

  function update(spa) {
    var rated = 0;
    spa.querySelectorAll("[data-spa-group]").forEach(function (group) {
      var state = groupState(group);
      rated += state.rated;
      group.classList.toggle("is-rated", state.complete);
      var count = group.querySelector("[data-group-count]");
      if (count) count.textContent = state.rated + " of " + state.total + " rated";
    });
    var answered = 0;
    spa.querySelectorAll(".wb-spa-questions input.wb-number").forEach(function (input) {
      if (isAnswered(input)) answered += 1;
    });
    var r = spa.querySelector('[data-count="rated"]');
    var a = spa.querySelector('[data-count="answered"]');
    if (r && r.textContent !== String(rated)) r.textContent = String(rated);
    if (a && a.textContent !== String(answered)) a.textContent = String(answered);
  }

  function init() {
    var form = document.getElementById("task-form");
    var spa = form && form.querySelector("[data-spa]");
    if (!spa || spa.dataset.ready) return;
    spa.dataset.ready = "yes";
    update(spa);

    form.addEventListener("input", function () { update(spa); });
    form.addEventListener("change", function () { update(spa); });

    spa.addEventListener("click", function (e) {
      var toggle = e.target.closest && e.target.closest("[data-spa-toggle]");
      if (!toggle) return;
      var group = toggle.closest("[data-spa-group]");
      var collapse = toggle.getAttribute("aria-expanded") === "true";
      setCollapsed(group, collapse);
      if (!collapse) {
        var first = group.querySelector("input[type=radio]:checked, input[type=radio]");
        if (first) first.focus();
      }
    });

    // A fully rated group folds when the reader moves on from it (focus leaves it), so the
    // page shortens as they go; it never folds under the reader's focus.
    spa.addEventListener("focusout", function (e) {
      var group = e.target.closest && e.target.closest("[data-spa-group]");
      if (!group || group.classList.contains("is-collapsed")) return;
      var next = e.relatedTarget;
      if (!next || group.contains(next)) return;
      if (groupState(group).complete) setCollapsed(group, true);
    });

    // A missing answer inside a folded group: open it so the browser can point at it.
    form.addEventListener("invalid", function (e) {
      var group = e.target.closest && e.target.closest("[data-spa-group]");
      if (group && group.classList.contains("is-collapsed")) setCollapsed(group, false);
    }, true);

    // "Questions" jumps to the first unanswered question (phones: the final step).
    var jump = spa.querySelector(".wb-spa-jump");
    if (jump) {
      jump.addEventListener("click", function (e) {
        e.preventDefault();
        var inputs = spa.querySelectorAll(".wb-spa-questions input.wb-number");
        var target = Array.prototype.find.call(inputs, function (i) { return !isAnswered(i); }) || inputs[0];
        var title = document.getElementById("wb-questions-title");
        if (title) title.scrollIntoView({ block: "start" });
        if (target) target.focus({ preventScroll: true });
      });
    }
  }

  document.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "task") init();
  });
  init();
})();
