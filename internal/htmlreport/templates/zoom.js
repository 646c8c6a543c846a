// Flame-graph zoom: a click on a frame widens it to the whole graph, a click
// on the root ("all") zooms back out. Without this script the graphs are
// complete, only not zoomable. Frame names are set with textContent, never
// parsed as markup.
(function () {
  "use strict";
  var CW = 6.71; // monospace advance at 11px, as charWidth in svg.go
  function fit(name, width) {
    var n = Math.floor((width - 6) / CW);
    if (name.length <= n) { return name; }
    return n < 3 ? "" : name.slice(0, n - 1) + "\u2026";
  }
  function zoom(svg, x0, w0) {
    var W = svg.viewBox.baseVal.width, eps = 1e-6;
    svg.querySelectorAll("g.f").forEach(function (g) {
      var x = parseFloat(g.getAttribute("data-x")), w = parseFloat(g.getAttribute("data-w"));
      if (x + w <= x0 + eps || x >= x0 + w0 - eps) { g.setAttribute("display", "none"); return; }
      g.removeAttribute("display");
      var a = Math.max((x - x0) / w0, 0), b = Math.min((x + w - x0) / w0, 1);
      var rect = g.querySelector("rect"), text = g.querySelector("text");
      rect.setAttribute("x", (a * W).toFixed(1));
      rect.setAttribute("width", Math.max((b - a) * W - 0.6, 0.4).toFixed(1));
      text.setAttribute("x", (a * W + 3).toFixed(1));
      text.textContent = fit(g.getAttribute("data-n"), (b - a) * W);
    });
    svg.setAttribute("data-zoom", x0.toFixed(6) + " " + w0.toFixed(6));
  }
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    if (!svg.querySelector("g.f")) { return; }
    svg.addEventListener("click", function (ev) {
      var g = ev.target.closest("g.f");
      if (g) { zoom(svg, parseFloat(g.getAttribute("data-x")), parseFloat(g.getAttribute("data-w"))); }
    });
  });
})();
