(function () {
  "use strict";
  var TIE = 1e-12;
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }
  function fmt(v) { return v === null || v === undefined ? "n/a" : String(+(+v).toPrecision(4)); }
  function key(cell) { return cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent; }
  function sortBy(th) {
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var asc = th.getAttribute("data-dir") !== "asc";
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("data-dir"); });
    th.setAttribute("data-dir", asc ? "asc" : "desc");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]), nx = parseFloat(x), ny = parseFloat(y);
      var r = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? r : -r;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    body.appendChild(frag);
  }
  document.addEventListener("click", function (e) {
    var th = e.target.closest ? e.target.closest("table.sortable thead th") : null;
    if (th) { sortBy(th); }
  });
  function fill(details) {
    var holders = details.querySelectorAll("[data-pq]");
    Array.prototype.forEach.call(holders, function (holder) {
      if (holder.getAttribute("data-done")) { return; }
      var d = JSON.parse(document.getElementById(holder.getAttribute("data-pq")).textContent);
      var out = [];
      for (var i = 0; i < d.ids.length; i++) {
        var b = d.baseline[i], c = d.candidate[i], diff = (b === null || c === null) ? null : c - b;
        var gain = diff === null ? null : (d.lower_is_better ? -diff : diff);
        var o = gain === null ? "n/a" : gain > TIE ? "improved" : gain < -TIE ? "degraded" : "unchanged";
        out.push("<tr><td>" + esc(d.ids[i]) + "</td><td>" + esc(d.texts ? d.texts[i] : "") + "</td><td class=num>" +
          fmt(b) + "</td><td class=num>" + fmt(c) + "</td><td class=num data-v=\"" + (diff === null ? "" : diff) +
          "\">" + (diff === null ? "n/a" : (diff > 0 ? "+" : "") + fmt(diff)) + "</td><td><span class=\"v v-" + o +
          "\">" + o + "</span></td></tr>");
      }
      holder.innerHTML = "<table class=\"sortable pq\"><thead><tr><th>query id</th><th>query</th><th>" +
        esc(d.baseline_label) + "</th><th>" + esc(d.candidate_label) +
        "</th><th>difference</th><th>outcome</th></tr></thead><tbody>" + out.join("") + "</tbody></table>";
      holder.setAttribute("data-done", "1");
    });
  }
  document.addEventListener("toggle", function (e) {
    if (e.target.tagName === "DETAILS" && e.target.open) { fill(e.target); }
  }, true);
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1)), el = id ? document.getElementById(id) : null;
    if (el && el.tagName === "DETAILS") { el.open = true; fill(el); }
  }
  openHash();
  window.addEventListener("hashchange", openHash);
  void document.body.offsetHeight;
  document.documentElement.setAttribute("data-ready-ms", performance.now().toFixed(1));
})();
