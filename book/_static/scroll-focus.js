// A display formula wider than the column scrolls sideways inside itself (course.css); a
// keyboard user must be able to reach it to scroll it, so an overflowing one takes focus.
(() => {
  const update = () => {
    document.querySelectorAll("div.math").forEach((el) => {
      if (el.scrollWidth > el.clientWidth + 1) el.setAttribute("tabindex", "0");
      else if (el.getAttribute("tabindex") === "0") el.removeAttribute("tabindex");
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", update);
  else update();
  window.addEventListener("resize", update);
})();
