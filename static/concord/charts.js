// Render the dashboard's Vega-Lite specs (server-built, embedded as JSON data blocks).
// CSP-safe: the AST interpreter replaces Vega's Function()-based expression compiler, and
// vega-embed injects no <style> (defaultStyle: false) and no action menu.
(function () {
  "use strict";
  function render(figure) {
    var source = document.getElementById(figure.dataset.spec);
    if (!source || figure.dataset.rendered) { return; }
    var spec = JSON.parse(source.textContent);
    figure.dataset.rendered = "pending";
    window.vegaEmbed(figure, spec, {
      ast: true,
      expr: window.vegaInterpreter.expressionInterpreter,
      actions: false,
      defaultStyle: false,
      renderer: "svg",
      tooltip: false
    }).then(function () {
      figure.dataset.rendered = "yes";
    }).catch(function (error) {
      figure.dataset.rendered = "failed";
      figure.textContent = "This chart could not be drawn: " + error;
    });
  }
  function renderAll(root) {
    (root || document).querySelectorAll("figure.chart[data-spec]").forEach(render);
  }
  document.addEventListener("DOMContentLoaded", function () { renderAll(document); });
  document.addEventListener("htmx:afterSwap", function (event) { renderAll(event.target); });
})();
