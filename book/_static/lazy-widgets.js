// Loads a page's explorers only when they are needed (book/_ext/fast_pages.py writes the tag):
// when an explorer comes within two screens of the viewport, or when the reader touches,
// clicks or focuses one, this script loads the page's widget state (data-state, a script that
// calls window.attncourseWidgetState) and then the widgets manager's scripts (data-scripts, in
// order: widgets-offline.js, RequireJS, embed-amd.js), which render every explorer.  Until
// then each explorer shows its placeholder (its first picture, at its size); the placeholder
// goes once the live explorer has drawn.
(function () {
  "use strict";
  var me = document.currentScript;
  var stateUrl = me.getAttribute("data-state");
  var scripts = JSON.parse(me.getAttribute("data-scripts") || "[]");
  var VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]';
  var loading = null;

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      tag.src = src;
      tag.async = false;
      tag.onload = resolve;
      tag.onerror = function () {
        reject(new Error("could not load " + src));
      };
      document.head.appendChild(tag);
    });
  }

  function load() {
    if (loading) return loading;
    loading = new Promise(function (resolve) {
      // The state script hands the state here; the manager reads it from a state <script>.
      window.attncourseWidgetState = function (state) {
        var tag = document.createElement("script");
        tag.type = "application/vnd.jupyter.widget-state+json";
        tag.textContent = JSON.stringify(state);
        document.body.appendChild(tag);
        resolve();
      };
    })
      .then(function () {
        return scripts.reduce(function (done, src) {
          return done.then(function () {
            return loadScript(src);
          });
        }, Promise.resolve());
      })
      .catch(function (err) {
        console.error("The explorers could not load:", err);
      });
    loadScript(stateUrl).catch(function (err) {
      console.error("The explorers' state could not load:", err);
    });
    return loading;
  }
  window.attncourseLoadWidgets = load;

  // A placeholder goes when the live widget beside it has drawn something.
  function watch(container) {
    var placeholder = container.querySelector(".lazy-widget-placeholder");
    if (!placeholder) return;
    var observer = new MutationObserver(function () {
      if (container.querySelector(".widget-subarea > *")) {
        observer.disconnect();
        placeholder.remove();
      }
    });
    observer.observe(container, { childList: true, subtree: true });
  }

  function start() {
    var views = Array.prototype.slice.call(document.querySelectorAll(VIEW));
    if (!views.length) return;
    var containers = views.map(function (view) {
      return view.parentElement;
    });
    containers.forEach(function (container) {
      watch(container);
      ["pointerdown", "touchstart", "focusin", "keydown"].forEach(function (type) {
        container.addEventListener(type, load, { once: true, passive: true });
      });
    });
    if (!("IntersectionObserver" in window)) {
      load();
      return;
    }
    var near = new IntersectionObserver(
      function (entries) {
        if (
          entries.some(function (entry) {
            return entry.isIntersecting;
          })
        ) {
          near.disconnect();
          load();
        }
      },
      { rootMargin: "200% 0px" }
    );
    containers.forEach(function (container) {
      near.observe(container);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
