// Runs after MathJax (deferred, in order) and before the widget manager renders (on load).
// The ipywidgets HTML manager typesets math with the MathJax 2 API (MathJax.Hub.Queue);
// MathJax 3 has none, so give it one that typesets with MathJax 3.
if (window.MathJax && !window.MathJax.Hub) {
  window.MathJax.Hub = {
    Queue: function () {
      if (window.MathJax.typesetPromise) window.MathJax.typesetPromise();
    },
  };
}

// Accessibility of what the widget manager draws (after load, asynchronously; the page's own
// HTML is fixed at build time by course_a11y.py):
// - a slider is named by its widget's description label (axe `aria-input-field-name`);
// - an image a widget draws gets alt text, naming the section it is in (axe `image-alt`);
// - a widget area that scrolls can be reached by keyboard (axe `scrollable-region-focusable`);
// - the controls of a widget that needs a kernel are described by the note under it
//   (website/build.py writes the note: on this page nothing recomputes the output).
(function () {
  var count = 0;
  function idOf(el) {
    if (!el.id) el.id = "course-a11y-" + ++count;
    return el.id;
  }
  function section(el) {
    var s = el.closest("section");
    var h = s && s.querySelector("h1, h2, h3, h4");
    return h ? h.textContent.replace(/[#¶]\s*$/, "").trim() : document.title;
  }
  function scrolls(el) {
    var style = getComputedStyle(el);
    return (el.scrollHeight > el.clientHeight && /auto|scroll/.test(style.overflowY)) ||
      (el.scrollWidth > el.clientWidth && /auto|scroll/.test(style.overflowX));
  }
  function fix() {
    document.querySelectorAll('.jupyter-widgets [role="slider"]').forEach(function (handle) {
      if (handle.hasAttribute("aria-label") || handle.hasAttribute("aria-labelledby")) return;
      var widget = handle.closest(".widget-slider") || handle.closest(".jupyter-widgets");
      var label = widget && widget.querySelector(".widget-label");
      if (label && label.textContent.trim()) handle.setAttribute("aria-labelledby", idOf(label));
      else handle.setAttribute("aria-label", "value");
    });
    document.querySelectorAll(".cell_output img:not([alt])").forEach(function (img) {
      img.setAttribute("alt", 'Plot drawn by the widget in "' + section(img) +
        '", for the settings stored with this page');
    });
    document.querySelectorAll(".cell_output .jupyter-widgets:not([tabindex])").forEach(function (el) {
      if (!scrolls(el) || el.querySelector("a, button, input, select, textarea, [tabindex]")) return;
      el.tabIndex = 0;
      el.setAttribute("role", "group");
      el.setAttribute("aria-label", "Widget output (scrolls)");
    });
    document.querySelectorAll(".kernel-note").forEach(function (note) {
      var cell = note.previousElementSibling;
      while (cell && !cell.classList.contains("cell")) cell = cell.previousElementSibling;
      if (!cell) return;
      var id = idOf(note);
      cell.querySelectorAll('[role="slider"], input, select, textarea, button').forEach(function (control) {
        var ids = (control.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
        if (ids.indexOf(id) < 0) control.setAttribute("aria-describedby", ids.concat([id]).join(" "));
      });
    });
  }
  var pending = null;
  function later() {
    if (pending === null) pending = setTimeout(function () { pending = null; fix(); }, 50);
  }
  new MutationObserver(later).observe(document.body, { childList: true, subtree: true });
  window.addEventListener("load", later);
  window.addEventListener("resize", later);
  fix();
})();
