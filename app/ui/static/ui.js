// Jobwire's dashboard: live refresh, the only thing the pages need JavaScript for (and the
// question a data-confirm button asks first). Every few
// seconds (the picker's choice, kept in localStorage) it fetches the page's own URL (its filters
// are in the query string) and swaps each [data-refresh] region for the new one; it waits while
// the tab is hidden, a row is selected or a field of a region being typed in has the focus.
(function () {
  "use strict";
  var KEY = "jobwire.refresh";
  var timer = null;

  function busy() {
    if (document.hidden) return true;
    if (document.querySelector("input[type=checkbox]:checked")) return true;
    var active = document.activeElement;
    return !!(active && active.closest && active.closest("[data-refresh]") &&
      active.matches("input:not([type=checkbox]):not([type=radio]), select, textarea"));
  }

  function refresh() {
    if (busy()) return;
    var regions = document.querySelectorAll("[data-refresh]");
    if (!regions.length) return;
    fetch(window.location.href, {headers: {"X-Jobwire-Refresh": "1"}, credentials: "same-origin"})
      .then(function (response) {
        if (!response.ok || response.redirected) throw new Error("refresh: " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (busy()) return;
        var fresh = new DOMParser().parseFromString(html, "text/html");
        regions.forEach(function (region) {
          var name = region.getAttribute("data-refresh");
          var next = fresh.querySelector('[data-refresh="' + name + '"]');
          if (next) region.replaceWith(document.importNode(next, true));
        });
        document.documentElement.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { /* the next tick tries again */ });
  }

  function schedule(seconds) {
    if (timer) clearInterval(timer);
    timer = seconds > 0 ? setInterval(refresh, seconds * 1000) : null;
  }

  // A button with data-confirm asks first (without JavaScript the form posts at once).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-confirm]");
    if (button && !window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", function () {
    var picker = document.querySelector("[data-refresh-interval]");
    if (!picker) return;
    var saved = null;
    try { saved = localStorage.getItem(KEY); } catch (e) { /* storage off */ }
    picker.value = saved !== null && picker.querySelector('option[value="' + saved + '"]') ? saved : "5";
    schedule(Number(picker.value));
    picker.addEventListener("change", function () {
      try { localStorage.setItem(KEY, picker.value); } catch (e) { /* storage off */ }
      schedule(Number(picker.value));
    });
    document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
  });
})();
