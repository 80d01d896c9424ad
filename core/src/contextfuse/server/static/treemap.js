// A squarified treemap layout (Bruls, Huizing and van Wijk, 2000): each item gets a
// rectangle whose area is exactly its share of the whole, rows laid along the shorter side
// so that the rectangles stay close to squares.
"use strict";
(function () {
  // The worst aspect ratio of a row of areas laid along a side of length `side`.
  function worst(areas, side) {
    const sum = areas.reduce((a, b) => a + b, 0);
    const max = Math.max(...areas);
    const min = Math.min(...areas);
    return Math.max((side * side * max) / (sum * sum), (sum * sum) / (side * side * min));
  }

  // items: [{value, ...}] with value > 0; box: {x, y, w, h}.
  // Returns [{item, x, y, w, h}] in the items' order of size (largest first).
  function squarify(items, box) {
    const kept = items.filter((item) => item.value > 0).sort((a, b) => b.value - a.value);
    const total = kept.reduce((sum, item) => sum + item.value, 0);
    if (!total || box.w <= 0 || box.h <= 0) return [];
    const scale = (box.w * box.h) / total;
    const cells = [];
    let { x, y, w, h } = box;
    let row = [];

    function layRow() {
      const areas = row.map((item) => item.value * scale);
      const sum = areas.reduce((a, b) => a + b, 0);
      if (w >= h) {
        // A column at the left, as wide as the row's area over the height.
        const width = sum / h;
        let top = y;
        row.forEach((item, i) => {
          const height = areas[i] / width;
          cells.push({ item, x, y: top, w: width, h: height });
          top += height;
        });
        x += width;
        w -= width;
      } else {
        const height = sum / w;
        let left = x;
        row.forEach((item, i) => {
          const width = areas[i] / height;
          cells.push({ item, x: left, y, w: width, h: height });
          left += width;
        });
        y += height;
        h -= height;
      }
      row = [];
    }

    for (const item of kept) {
      const side = Math.min(w, h);
      const areas = row.map((r) => r.value * scale);
      const grown = areas.concat([item.value * scale]);
      if (row.length && worst(grown, side) > worst(areas, side)) layRow();
      row.push(item);
    }
    if (row.length) layRow();
    return cells;
  }

  window.contextfuseTreemap = { squarify };
})();
