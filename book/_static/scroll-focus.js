// A region that scrolls inside itself (a wide formula, a long output, a table, code) must be
// reachable from the keyboard to be scrolled: it takes focus (tabindex 0) while it overflows.
// The theme does this by measuring every such region when the page loads, which lays out the
// whole page at once; here a region is measured only when it comes near the screen, and until
// then it is focusable, the safe default.  (book/_ext/fast_pages.py turns the theme's off.)
(() => {
  const SELECTOR = [
    "pre", ".nboutput > .output_area", ".cell_output > .output", ".jp-RenderedHTMLCommon",
    ".pst-scrollable-table-container", "div.math",
  ].join(", ");
  const near = new Set();
  const measure = (el) => {
    const scrolls = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
    el.tabIndex = scrolls ? 0 : -1;
  };
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (entry.isIntersecting) {
        near.add(entry.target);
        measure(entry.target);
      } else {
        near.delete(entry.target);
      }
    }
  }, { rootMargin: "100% 0px" });
  const watch = (root) => {
    const found = root.matches && root.matches(SELECTOR) ? [root] : [];
    for (const el of [...found, ...root.querySelectorAll(SELECTOR)]) {
      if (!el.hasAttribute("tabindex")) el.tabIndex = 0;
      observer.observe(el);
    }
  };
  let timer = null;
  const remeasure = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      document.querySelectorAll(SELECTOR).forEach((el) => {
        if (!near.has(el) && el !== document.activeElement) el.tabIndex = 0;
      });
      near.forEach(measure);
    }, 300);
  };
  const start = () => {
    watch(document);
    window.addEventListener("resize", remeasure);
    const main = document.getElementById("main-content");
    if (main) {
      new MutationObserver((records) => {
        for (const record of records) {
          record.addedNodes.forEach((node) => { if (node.nodeType === 1) watch(node); });
        }
      }).observe(main, { subtree: true, childList: true });
    }
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
