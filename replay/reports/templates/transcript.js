(function () {
  "use strict";
  var box = document.getElementById("search");
  var count = document.getElementById("count");
  var entries = Array.prototype.slice.call(document.querySelectorAll("#entries > .entry"));
  var texts = entries.map(function (e) { return e.textContent.toLowerCase(); });
  function filter() {
    var q = box.value.trim().toLowerCase();
    var shown = 0;
    entries.forEach(function (e, i) {
      var hit = !q || texts[i].indexOf(q) !== -1;
      e.hidden = !hit;
      if (hit) { shown += 1; }
    });
    count.textContent = shown + " of " + entries.length + " entries";
  }
  box.addEventListener("input", filter);
  filter();
})();
