// Accessible names that match what the page-header buttons show (WCAG 2.5.3, "label in name"),
// so that a speech-input user can say what they see.
(() => {
  // The colour-mode button shows one icon whose tooltip ("Light", "Dark", ...) is not the
  // button's name ("Color mode"): the icons are decoration.  Font Awesome turns each <i> into
  // an <svg> (copying the tooltip into a <title>) at a moment of its own, so this runs again
  // whenever the button's content changes.
  const decorate = (button) => {
    button.querySelectorAll(".theme-switch").forEach((icon) => {
      icon.querySelectorAll("title").forEach((title) => title.remove());
      for (const attribute of ["title", "aria-labelledby", "role"]) {
        if (icon.hasAttribute(attribute)) icon.removeAttribute(attribute);
      }
      if (icon.getAttribute("aria-hidden") !== "true") icon.setAttribute("aria-hidden", "true");
    });
  };
  const label = () => {
    // The search field shows "Search Ctrl+K" but was named only "Search": name it by its text.
    document.querySelectorAll(".search-button-field[aria-label]").forEach((button) => {
      button.removeAttribute("aria-label");
    });
    document.querySelectorAll(".theme-switch-button").forEach((button) => {
      decorate(button);
      if (!button.dataset.decorated) {
        button.dataset.decorated = "true";
        new MutationObserver(() => decorate(button)).observe(button, {
          childList: true,
          subtree: true,
          attributes: true,
          attributeFilter: ["title", "aria-labelledby", "role"],
        });
      }
    });
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", label);
  } else {
    label();
  }
})();
