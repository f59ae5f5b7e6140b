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
