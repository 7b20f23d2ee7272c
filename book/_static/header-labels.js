// Accessible names that match what the page-header buttons show (WCAG 2.5.3, "label in name"),
// so that a speech-input user can say what they see.
document.addEventListener("DOMContentLoaded", () => {
  // The search field shows "Search Ctrl+K" but was named only "Search": name it by its text.
  document.querySelectorAll(".search-button-field[aria-label]").forEach((button) => {
    button.removeAttribute("aria-label");
  });
  // The colour-mode button shows one icon whose tooltip ("Light", "Dark", ...) is not the
  // button's name ("Color mode"); the icons are decoration, the name stays "Color mode".
  document.querySelectorAll(".theme-switch-button .theme-switch").forEach((icon) => {
    icon.removeAttribute("title");
    icon.setAttribute("aria-hidden", "true");
  });
});
