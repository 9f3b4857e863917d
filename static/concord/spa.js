/* Concord SPA batch page (task_spa.html): live progress counts, prompt groups that fold away
   once every story in them is rated (and open again on request), and the questions in reach.
   Loaded after workbench.js (which keeps timings, drafts and the exposure record); no inline
   handlers (CSP). Without JavaScript every group stays open and the form works as before. */
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
