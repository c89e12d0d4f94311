/* Presenter mode's stage: keyboard control, Link inside the phone, steps run without leaving the page.
 *
 * Each step is a form POST answered with the whole stage; the stage element is swapped in place (so
 * full screen survives) and htmx picks up its live panel again. Keys: → / space / PageDown next,
 * ← / PageUp back, Enter retries a failed step, r restart, f full screen, h hide the controls,
 * s the printable summary, a autoplay (the next step every few seconds, stopping at pause steps).
 */
(function () {
  "use strict";

  var busy = false;
  var AUTOPLAY_MS = 4000;
  var autoplayTimer = null;
  var STORY_KEYS_IN_LINK = ["ArrowRight", "ArrowLeft", "PageDown", "PageUp"];

  function stage() {
    return document.getElementById("stage");
  }

  function applyBrand() {
    var s = stage() || document.querySelector("[data-brand-color]");
    if (!s) return;
    // CSSOM, not a style attribute: the console's CSP allows no inline styles.
    document.documentElement.style.setProperty("--brand", s.dataset.brandColor || "#0f766e");
    document.documentElement.dataset.theme = s.dataset.theme || "light";
  }

  function openLink(token) {
    if (!token || !window.Link) return;
    window.Link.open({
      linkToken: token,
      onExit: function () {
        // The presenter may have finished Link by hand: show what the backend saw since.
        document.body.dispatchEvent(new Event("stage-refresh"));
      },
    });
    // The SDK puts its overlay over the page; on the stage it belongs inside the phone's screen.
    var overlay = document.querySelector("[data-link-overlay]");
    var screen = document.getElementById("phone-screen");
    if (overlay && screen) screen.appendChild(overlay);
    // Link takes the keyboard focus (it is the customer's screen), but the story's arrow keys still work in
    // it: Link is served from this origin, so its document can be listened to. Typing, space and Enter stay Link's.
    var iframe = overlay ? overlay.querySelector("iframe") : null;
    if (iframe) {
      iframe.addEventListener("load", function () {
        var doc;
        try {
          doc = iframe.contentDocument;
        } catch (err) {
          return;
        }
        if (!doc) return;
        doc.addEventListener("keydown", function (event) {
          if (STORY_KEYS_IN_LINK.indexOf(event.key) >= 0) onKey(event);
        });
      });
    }
  }

  function autoplaying() {
    return document.documentElement.classList.contains("autoplay");
  }

  function scheduleAutoplay() {
    window.clearTimeout(autoplayTimer);
    var s = stage();
    if (!autoplaying() || !s) return;
    // A pause step, a failure or the end stops autoplay until the presenter moves on by hand.
    if (s.dataset.pause === "1" || find('[data-stage-form="retry"]') || !find('[data-stage-form="next"]')) return;
    autoplayTimer = window.setTimeout(function () {
      submit(find('[data-stage-form="next"]'));
    }, AUTOPLAY_MS);
  }

  function toggleAutoplay() {
    document.documentElement.classList.toggle("autoplay");
    var note = find("[data-autoplay-state]");
    if (note) note.textContent = autoplaying() ? "Autoplay on" : "";
    if (autoplaying()) submit(find('[data-stage-form="next"]'));
    else window.clearTimeout(autoplayTimer);
  }

  function afterRender() {
    applyBrand();
    var s = stage();
    if (s && s.dataset.openToken) openLink(s.dataset.openToken);
    var note = find("[data-autoplay-state]");
    if (note) note.textContent = autoplaying() ? "Autoplay on" : "";
    scheduleAutoplay();
  }

  function showProblem(message) {
    var s = stage();
    if (!s) return;
    var box = document.createElement("div");
    box.className = "failure";
    box.setAttribute("role", "alert");
    box.textContent = message;
    s.insertBefore(box, s.children[1] || null);
  }

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("stage");
    if (!fresh) {
      showProblem("The server answered with something that is not the stage. Reload the page to continue.");
      return;
    }
    if (window.Link) window.Link.close();
    stage().replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    if (fresh.dataset.url) window.history.replaceState(null, "", fresh.dataset.url);
    afterRender();
  }

  function go(url, options) {
    if (busy || !stage()) return;
    busy = true;
    stage().classList.add("is-busy");
    fetch(url, Object.assign({ credentials: "same-origin" }, options || {}))
      .then(function (response) {
        return response.text().then(swap);
      })
      .catch(function () {
        showProblem("The server did not answer. Check it is running, then press the key again.");
      })
      .finally(function () {
        busy = false;
        var s = stage();
        if (s) s.classList.remove("is-busy");
      });
  }

  function submit(form) {
    if (!form) return;
    go(form.action, { method: "POST", body: new FormData(form) });
  }

  function follow(link) {
    if (link) go(link.href);
  }

  function find(selector) {
    var s = stage();
    return s ? s.querySelector(selector) : null;
  }

  function toggleFullscreen() {
    if (document.fullscreenElement) document.exitFullscreen();
    else if (document.documentElement.requestFullscreen) document.documentElement.requestFullscreen();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("[data-stage-form]");
    if (!form) return;
    event.preventDefault();
    submit(form);
  });

  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-stage-link]");
    if (link) {
      event.preventDefault();
      follow(link);
      return;
    }
    if (event.target.closest("[data-fullscreen]")) toggleFullscreen();
    if (event.target.closest("[data-print]")) window.print();
    var button = event.target.closest("[data-link-button]");
    if (button) openLink(button.dataset.linkToken);
  });

  document.body.addEventListener("stage-refresh", function () {
    var s = stage();
    if (s && s.dataset.url) go(s.dataset.url);
  });

  document.addEventListener("fullscreenchange", function () {
    document.documentElement.classList.toggle("presenting", !!document.fullscreenElement);
  });

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest && event.target.closest("input, textarea, select")) return;
    var key = event.key;
    var handled = true;
    if (key === "ArrowRight" || key === " " || key === "PageDown") submit(find('[data-stage-form="next"]'));
    else if (key === "ArrowLeft" || key === "PageUp") follow(find('[data-stage-link="back"]'));
    else if (key === "Enter" && find('[data-stage-form="retry"]')) submit(find('[data-stage-form="retry"]'));
    else if (key === "r") submit(find('[data-stage-form="restart"]'));
    else if (key === "f") toggleFullscreen();
    else if (key === "h") document.documentElement.classList.toggle("presenting");
    else if (key === "s" && find("[data-summary]")) window.location.href = find("[data-summary]").href;
    else if (key === "a") toggleAutoplay();
    else handled = false;
    if (handled) event.preventDefault();
  }

  document.addEventListener("keydown", onKey);

  afterRender();
  document.documentElement.dataset.stageReady = "1";
})();
