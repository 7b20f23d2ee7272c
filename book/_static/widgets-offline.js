// Loaded (before require.js and embed-amd.js) on book pages that embed widget state; see
// nb_ipywidgets_js in _config.yml (book/_static/lazy-widgets.js loads them when an explorer
// comes near).  Three fixes so that embedded widgets work offline, without errors, next to the
// book theme and with formulas in their text, and a fourth for screen readers.
(function () {
  "use strict";

  // 1. embed-amd.js finds its Font Awesome files next to the AMD module's URL.  Map every
  //    module it defines to embed-amd.js itself, so the fonts are looked up in
  //    _static/vendor/jupyter-widgets/ instead of beside the page.  A `require` object set
  //    before require.js loads is RequireJS's configuration.
  var here = document.currentScript.src; // .../_static/widgets-offline.js?v=...
  var staticDir = here.slice(0, here.lastIndexOf("/") + 1);
  var bundle = staticDir + "vendor/jupyter-widgets/embed-amd";
  var paths = {};
  [
    "@jupyter-widgets/base",
    "@jupyter-widgets/base7",
    "@jupyter-widgets/controls",
    "@jupyter-widgets/controls7",
    "@jupyter-widgets/html-manager",
    "@jupyter-widgets/html-manager/dist/libembed-amd",
  ].forEach(function (id) {
    paths[id] = bundle;
  });
  if (typeof window.require === "undefined") {
    window.require = { paths: paths };
  } else if (typeof window.require.config === "function") {
    window.require.config({ paths: paths });
  }

  // 2. The theme's fontawesome.js replaces each <i class="fa ..."> with an <svg>, also inside
  //    widgets rendered later (it watches the DOM); the Play widget then looks up its <i> to
  //    switch play/pause and throws.  Let it convert only the icons in the page as served
  //    (the theme's); widgets draw theirs with the Font Awesome font of embed-amd.js.
  window.FontAwesomeConfig = Object.assign({}, window.FontAwesomeConfig, { observeMutations: false });

  // 3. ipywidgets typesets descriptions (and HTMLMath) with MathJax 2's
  //    MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]) whenever window.MathJax exists.
  //    The book renders its own formulas when it is built (KaTeX) and loads no MathJax, so
  //    answer that call here: an element whose text has TeX in it ($...$, $$...$$, \(...\),
  //    \[...\]) is rendered with the vendored KaTeX, loaded on first need.
  var TEX = /\$[^$]+\$|\\\(|\\\[/;
  var katexReady = null;

  function loadKatex() {
    if (katexReady) return katexReady;
    function load(src) {
      return new Promise(function (resolve, reject) {
        var tag = document.createElement("script");
        tag.src = staticDir + src;
        tag.onload = resolve;
        tag.onerror = reject;
        document.head.appendChild(tag);
      });
    }
    if (!document.querySelector('link[href*="vendor/katex/katex.min.css"]')) {
      var css = document.createElement("link");
      css.rel = "stylesheet";
      css.href = staticDir + "vendor/katex/katex.min.css";
      document.head.appendChild(css);
    }
    if (typeof window.define === "function" && window.define.amd && typeof window.require === "function") {
      // RequireJS is on the page (the widgets need it): KaTeX's files then register as AMD
      // modules instead of setting globals, so load them as modules.
      window.require.config({ paths: { katex: staticDir + "vendor/katex/katex.min" } });
      katexReady = new Promise(function (resolve, reject) {
        window.require(["katex", staticDir + "vendor/katex/auto-render.min.js"], function (katex, render) {
          resolve(typeof render === "function" ? render : render && render.default);
        }, reject);
      });
    } else {
      katexReady = load("vendor/katex/katex.min.js")
        .then(function () {
          return load("vendor/katex/auto-render.min.js");
        })
        .then(function () {
          return window.renderMathInElement;
        });
    }
    return katexReady;
  }

  function typeset(command) {
    var element = command && command[2];
    if (!element || !element.nodeType || !TEX.test(element.textContent || "")) return;
    loadKatex()
      .then(function (renderMathInElement) {
        renderMathInElement(element, {
          delimiters: [
            { left: "$$", right: "$$", display: true },
            { left: "$", right: "$", display: false },
            { left: "\\(", right: "\\)", display: false },
            { left: "\\[", right: "\\]", display: true },
          ],
          throwOnError: false,
        });
      })
      .catch(function (err) {
        console.warn("KaTeX could not typeset a widget's text:", err);
      });
  }

  if (!window.MathJax) {
    window.MathJax = { Hub: { Queue: typeset } };
  }

  // This script may be loaded after the page was parsed (book/_static/lazy-widgets.js loads
  // it when an explorer comes near): then run at once what waits for the parse.
  function whenParsed(fn) {
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
    else fn();
  }

  // 4. Accessible names for sliders.  ipywidgets draws a slider's handle as a
  //    <div role="slider"> (noUiSlider) and its description as a <label> tied to nothing, so a
  //    screen reader meets a nameless slider.  Name each handle after its description, and let
  //    it announce the readout (a SelectionSlider's aria-valuenow is an index, not the value
  //    shown).  Widgets render after the page loads and readouts change as sliders move, so
  //    this runs again whenever the widget area changes.
  function nameSliders() {
    var handles = document.querySelectorAll(".widget-slider .noUi-handle");
    Array.prototype.forEach.call(handles, function (handle) {
      var slider = handle.closest(".widget-slider");
      var label = slider.querySelector(".widget-label");
      var readout = slider.querySelector(".widget-readout");
      var name = label ? label.textContent.trim() : "";
      if (name && handle.getAttribute("aria-label") !== name) handle.setAttribute("aria-label", name);
      var value = readout ? readout.textContent.trim() : "";
      if (value && handle.getAttribute("aria-valuetext") !== value) handle.setAttribute("aria-valuetext", value);
    });
  }

  var pending = false;
  function scheduleNaming() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () {
      pending = false;
      nameSliders();
    });
  }

  whenParsed(function () {
    if (!window.MutationObserver) return;
    new MutationObserver(scheduleNaming).observe(document.body, {
      childList: true,
      subtree: true,
      characterData: true,
    });
    scheduleNaming();
  });
})();
