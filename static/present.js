/* Presenter mode's stage: keyboard control, Link inside the phone, steps run without leaving the page.
 *
 * Each step is a form POST answered with the whole stage; the stage element is swapped in place (so
 * full screen survives) and htmx picks up its live panel again. Keys: → / space / PageDown next,
 * ← / PageUp back, Enter retries a failed step, r restart, f full screen, h hide the controls,
 * s the printable summary, a autoplay (the next step every few seconds, stopping at pause steps).
 *
 * The stage fits the window: the phone is drawn at 380x760 and scaled to the height the caption leaves
 * (`--phone-scale`), the panel's type follows the viewport (present.css). Controls and key hints are hidden
 * until ? (or h) shows them. Keys pressed while a step loads are queued (the last one runs after it).
 *
 * Link in the phone is driven, not faked: when the next step completes Link (`complete_link`) and Link is
 * open in the phone, → (or autoplay) fills it in on screen at a human pace from the step's plan (the
 * scenario's answers, `data-drive` on the step's form, see console.presenter.drive): the search typed letter
 * by letter, each button pressed visibly, the credentials typed, then Done; only then does the step run,
 * and it finds Link finished. Link is served from this page's origin, so the stage reads and fills its
 * document directly: Link itself offers no remote control, so no customer page embedding it could press
 * Confirm for the person. A second → while Link is being filled in hurries it (the rest is filled in ten
 * times faster, still on screen; the step never completes Link out of sight); clicking or typing in Link
 * hands it to the presenter (the stage stops driving; → resumes from
 * the screen Link is on). If Link cannot be driven (a screen the stage does not know, a button missing),
 * the step completes Link headlessly, so the demo never stalls, and a quiet note says so. Closing Link with ×
 * uses its token up: the stage steps back to before the step that created it, with a sentence; → goes on.
 * A reload at a step where Link belongs open opens it again (the server renders the token to open).
 *
 * `?speed=N` (1 to 50) runs typing, pauses and autoplay N times faster (for tests and rehearsals).
 */
(function () {
  "use strict";

  var busy = false;
  var AUTOPLAY_MS = 4000;
  var autoplayTimer = null;
  var STORY_KEYS_IN_LINK = ["ArrowRight", "ArrowLeft", "PageDown", "PageUp"];
  var speed = readSpeed();
  // Human pace, in milliseconds: per character typed, reading a new screen, holding a press, the success screen.
  var PACE = { type: 110, read: 900, press: 380, done: 1600 };
  var SCREEN_TIMEOUT_MS = 15000;
  var driver = null; // the Link driver while it runs: {cancelled: null | "takeover" | "stop", hurry: bool}
  var queued = null; // a story key pressed while a step was loading: run once the stage is drawn
  var HURRY = 10; // → while Link is being filled in: the rest this many times faster
  var pendingNote = ""; // a note for the next stage rendered (Link completed without the phone)
  // Why it did, for the presenter only: in the controls (hidden from the room), never under the caption.
  var pendingDetail = "";

  function readSpeed() {
    var value = parseFloat(new URLSearchParams(window.location.search).get("speed"));
    return value >= 1 && value <= 50 ? value : 1;
  }

  function withSpeed(url) {
    if (speed === 1) return url;
    var u = new URL(url, window.location.href);
    u.searchParams.set("speed", String(speed));
    return u.pathname + u.search;
  }

  function stage() {
    return document.getElementById("stage");
  }

  // WCAG's relative luminance and contrast ratio of #rrggbb colours.
  function luminance(hex) {
    var m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || "");
    if (!m) return 0;
    var c = [m[1], m[2], m[3]].map(function (part) {
      var v = parseInt(part, 16) / 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }

  function contrast(a, b) {
    var la = luminance(a), lb = luminance(b);
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  }

  var INK = "#0b1220";

  function applyBrand() {
    var s = stage() || document.querySelector("[data-brand-color]");
    if (!s) return;
    var brand = s.dataset.brandColor || "#0f766e";
    var root = document.documentElement.style;
    // CSSOM, not a style attribute: the console's CSP allows no inline styles.
    root.setProperty("--brand", brand);
    // Text on the brand colour, and the brand as ink on white: a prospect's light colour (a cream, a pale
    // yellow) left white type on it, and its name in the phone's bar, unreadable.
    root.setProperty("--on-brand", contrast(brand, "#ffffff") >= contrast(brand, INK) ? "#ffffff" : INK);
    root.setProperty("--brand-ink", contrast(brand, "#ffffff") >= 3 ? brand : INK);
    document.documentElement.dataset.theme = s.dataset.theme || "light";
  }

  function linkFrame() {
    return document.querySelector("#phone-screen [data-link-overlay] iframe");
  }

  // The phone is drawn at 380x760; it is scaled to the height the stage leaves it (and at most 45% of the width).
  // In a phone-sized window (one column that scrolls) it fills the width, but no taller than the window above the
  // controls, which stay at the bottom of the screen once shown: at full size their bar hid the phone's lower
  // part (Link's Continue button) wherever the phone was scrolled to.
  function fitPhone() {
    var main = document.querySelector(".stage-main");
    if (!main) return;
    var narrow = window.matchMedia("(max-width: 600px)").matches;
    var bar = document.querySelector(".controls");
    var barHeight = bar ? bar.offsetHeight : 0; // 0 while hidden
    var scale = narrow
      ? Math.min(1, main.clientWidth / 380, (window.innerHeight - barHeight - 8) / 760)
      : Math.min(main.clientHeight / 760, (main.clientWidth * 0.45) / 380);
    if (scale > 0) document.documentElement.style.setProperty("--phone-scale", scale.toFixed(4));
  }

  function phoneScale() {
    var screen = document.getElementById("phone-screen");
    if (!screen || !screen.offsetWidth) return 1;
    return screen.getBoundingClientRect().width / screen.offsetWidth || 1;
  }

  function openLink(token) {
    if (!token || !window.Link) return;
    window.Link.open({ linkToken: token, onExit: onLinkExit });
    // Until the stage hears keys inside Link, the stage keeps the keyboard: a key pressed while Link loads
    // reaches the story (Link takes the focus as soon as its page listens, see listenToLink).
    var s = stage();
    if (s) s.focus({ preventScroll: true });
    // The SDK puts its overlay over the page; on the stage it belongs inside the phone's screen.
    var overlay = document.querySelector("[data-link-overlay]");
    var screen = document.getElementById("phone-screen");
    // moveBefore keeps Link's page loading where it is; appendChild (older browsers) makes it load again.
    if (overlay && screen) {
      if (typeof screen.moveBefore === "function") screen.moveBefore(overlay, null);
      else screen.appendChild(overlay);
    }
    // Link takes the keyboard focus (it is the customer's screen), but the story's arrow keys still work in
    // it: Link is served from this origin, so its document can be listened to. Typing, space and Enter stay
    // Link's, and a person's click or key in Link while the stage fills it in hands Link to them.
    var iframe = overlay ? overlay.querySelector("iframe") : null;
    if (!iframe) return;
    var refused = 0;
    iframe.addEventListener("load", function () {
      if (listenToLink(iframe) || !refusedPage(iframe) || refused >= LINK_REFUSED_TRIES) return;
      // Link's page refused for now (429: too many requests from this machine's address, another program on
      // it may have used its share up): the phone showed the refusal's plain text to the room. Load it again
      // (Link opens again at the screen it was on) after a second.
      refused += 1;
      window.setTimeout(function () {
        if (iframe.isConnected) iframe.contentWindow.location.reload();
      }, 1000);
    });
    // Also as soon as Link's document is there (before its load event), so an early key press is not lost.
    var poll = window.setInterval(function () {
      if (!iframe.isConnected) window.clearInterval(poll);
      else if (listenToLink(iframe)) window.clearInterval(poll);
    }, 50);
  }

  // Whether Link's frame holds a plain-text answer (the server's 429 refusal) instead of Link's page (HTML).
  function refusedPage(iframe) {
    try {
      var doc = iframe.contentDocument;
      return !!doc && doc.contentType === "text/plain";
    } catch (err) {
      return false;
    }
  }

  var listened = new WeakSet();

  // Listen to Link's document once: the story's keys, and a person's hands (which take Link over).
  function listenToLink(iframe) {
    var doc;
    try {
      doc = iframe.contentDocument;
    } catch (err) {
      return false;
    }
    if (!doc || !doc.getElementById("link-screen")) return false;
    if (listened.has(doc)) return true;
    listened.add(doc);
    doc.addEventListener("keydown", function (event) {
      if (STORY_KEYS_IN_LINK.indexOf(event.key) >= 0) onKey(event);
      else if (event.isTrusted) takeOver();
    });
    doc.addEventListener("pointerdown", function (event) {
      if (event.isTrusted) takeOver();
    });
    iframe.setAttribute("data-stage-keys", ""); // the story's keys work inside Link from now on
    // Link is the customer's screen: it has the keyboard from now on (the story's keys still work in it),
    // unless the presenter pressed a key meanwhile and the stage is filling Link in.
    if (!driver && document.activeElement === stage()) iframe.focus();
    return true;
  }

  function onLinkExit(payload) {
    if (driver && !driver.cancelled) return; // the stage pressed Done itself: the driver carries on with the step
    if (driver) driver.cancelled = "stop";
    var s = stage();
    var opened = s ? parseInt(s.dataset.linkStep || "0", 10) : 0;
    if (!(payload && payload.completed) && opened > 0) {
      // Closed with × (or Escape) before the customer finished: its token is used up, so step back to before
      // the step that created it (data-link-step), with a sentence; → makes a new token and opens Link again.
      var back = new URL(s.dataset.url, window.location.href);
      back.searchParams.set("step", String(opened - 1));
      back.searchParams.set("closed", "1");
      go(back.pathname + back.search);
      return;
    }
    var next = find('[data-stage-form="next"]');
    if (autoplaying() && payload && payload.completed && next && next.dataset.drive) {
      advance(); // finished by hand during autoplay: the story follows (the step finds Link finished)
      return;
    }
    // The presenter may have finished Link by hand: show what the backend saw since.
    document.body.dispatchEvent(new Event("stage-refresh"));
  }

  function autoplaying() {
    return document.documentElement.classList.contains("autoplay");
  }

  function scheduleAutoplay() {
    window.clearTimeout(autoplayTimer);
    var s = stage();
    if (!autoplaying() || !s) return;
    // A pause step, a failure or the end stops autoplay until the presenter moves on by hand. At a pause step
    // the presenter (controls hidden) gets a small cue in the corner that → is theirs to press.
    var next = find('[data-stage-form="next"]');
    if (s.dataset.pause === "1" && next && !find('[data-stage-form="retry"]')) {
      showWaiting(true);
      return;
    }
    if (s.dataset.pause === "1" || find('[data-stage-form="retry"]') || !next) return;
    autoplayTimer = window.setTimeout(advance, AUTOPLAY_MS / speed);
  }

  // The cue that autoplay waits for → (at a pause step); gone as soon as the story moves or autoplay stops.
  function showWaiting(on) {
    var cue = find("[data-autoplay-wait]");
    if (cue) cue.hidden = !on;
    showState();
  }

  function showState() {
    var note = find("[data-autoplay-state]");
    if (!note) return;
    var parts = [];
    var cue = find("[data-autoplay-wait]");
    if (autoplaying()) parts.push(cue && !cue.hidden ? "Autoplay on, waiting: → continues" : "Autoplay on");
    if (driver) parts.push(driver.hurry ? "Filling in Link, faster" : "Filling in Link (→: faster)");
    note.textContent = parts.join(" · ");
  }

  function toggleAutoplay() {
    document.documentElement.classList.toggle("autoplay");
    showState();
    showWaiting(false);
    if (autoplaying()) advance();
    else window.clearTimeout(autoplayTimer);
  }

  function setNote(text) {
    var note = find("[data-drive-note]");
    if (note) note.textContent = text;
  }

  // The phone fits the height the rest of the stage leaves, and that changes between window resizes too: the
  // controls shown by ?, a note under the caption. The phone then covered the controls' buttons, or ran
  // below the window.
  var mainResized = window.ResizeObserver
    ? new ResizeObserver(function () {
        fitPhone();
        markClippedPanels();
      })
    : null;

  function watchMain() {
    var main = document.querySelector(".stage-main");
    if (!mainResized || !main) return;
    mainResized.disconnect();
    mainResized.observe(main);
    // The controls too: shown, hidden, or a note added, they change the height a phone-sized window leaves.
    var bar = document.querySelector(".controls");
    if (bar) mainResized.observe(bar);
  }

  // A panel holding more than it shows fades out at its bottom: rows cut mid-line looked broken on a projector.
  function markClippedPanels() {
    var panels = document.querySelectorAll("#backend .panel");
    for (var i = 0; i < panels.length; i++) {
      var p = panels[i];
      if (p.scrollHeight > p.clientHeight + 1) p.setAttribute("data-clipped", "");
      else p.removeAttribute("data-clipped");
    }
  }

  document.addEventListener("htmx:afterSettle", markClippedPanels);

  function afterRender() {
    applyBrand();
    watchMain();
    var s = stage();
    if (s && s.dataset.openToken) openLink(s.dataset.openToken);
    if (pendingNote) setNote(pendingNote);
    var detail = find("[data-drive-detail]");
    if (detail) detail.textContent = pendingDetail;
    pendingNote = pendingDetail = "";
    fitPhone();
    markClippedPanels();
    showState();
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
    // A step refused because another tab replaced this stage's run: the answer's phone and panel are that other
    // run's (its workspace is the browser's now), which read "No switch yet" under a caption saying the switch
    // happened. The stage keeps its own phone and panel (the panel's poll keeps them, see /present/backend).
    var kept = fresh.hasAttribute("data-keeps-run") ? document.querySelector("#stage .stage-main") : null;
    var theirs = kept ? fresh.querySelector(".stage-main") : null;
    if (theirs) theirs.replaceWith(kept);
    stage().replaceWith(fresh);
    if (window.htmx) window.htmx.process(fresh);
    if (fresh.dataset.url) window.history.replaceState(null, "", withSpeed(fresh.dataset.url));
    afterRender();
  }

  // A step refused with 429 is sent again after its Retry-After, for at most this long in all (then the stage
  // says so, and the keys pressed meanwhile, queued while it waited, run).
  var BUSY_MAX_WAIT_S = 60;
  var LINK_REFUSED_TRIES = 30; // Link's page refused in the phone: loaded again once a second, this many times

  function go(url, options) {
    if (!stage()) return;
    if (busy) return;
    if (driver) driver.cancelled = "stop"; // back, restart or a refresh while Link was being filled in
    busy = true;
    stage().classList.add("is-busy");
    var waited = 0;
    function send() {
      return fetch(url, Object.assign({ credentials: "same-origin" }, options || {})).then(function (response) {
        if (response.status === 429 && waited < BUSY_MAX_WAIT_S) return later(response);
        if (waited) setNote("");
        if (response.status === 429) {
          showProblem("The server is still refusing requests from this machine (too many from its address). " +
            "Press the key again in a moment.");
          return null;
        }
        return response.text().then(swap);
      });
    }
    // 429: the server refused the request before doing anything (too many from this address: another program
    // on the same machine can use its share up), so it is sent again after Retry-After rather than leaving the
    // room a page that is not the stage. The room reads a calm line; the reason is for the presenter's eyes.
    // A step's POST answers with a redirect to the stage: when that GET was the one refused, the step has run,
    // so it is the GET that is sent again (sending the POST again ran the step twice: two Link tokens).
    function later(response) {
      if (response.redirected) {
        url = response.url;
        options = { method: "GET" };
      }
      var asked = Math.max(parseInt(response.headers.get("Retry-After"), 10) || 1, 1);
      var wait = Math.min(asked, BUSY_MAX_WAIT_S - waited);
      waited += wait;
      setNote("One moment: the server is busy…");
      var detail = find("[data-drive-detail]");
      if (detail) {
        detail.textContent = "For you only: the server refused the step for now (too many requests from this " +
          "machine's address); it is sent again in " + wait + " s.";
      }
      return new Promise(function (resolve) {
        window.setTimeout(resolve, wait * 1000);
      }).then(send);
    }
    send()
      .catch(function () {
        showProblem("The server did not answer. Check it is running, then press the key again.");
      })
      .finally(function () {
        busy = false;
        var s = stage();
        if (s) s.classList.remove("is-busy");
        var next = queued;
        queued = null;
        if (next) next();
      });
  }

  var WAITING_NOTE_MS = 700;

  function submit(form) {
    if (!form) return;
    go(form.action, { method: "POST", body: new FormData(form) });
    // A step that waits for a webhook may take seconds (a slow receiver, a busy worker): after a moment the room
    // reads what is awaited under the caption, rather than a dimmed caption and nothing happening.
    var waiting = form.dataset.waiting;
    if (waiting) {
      var s = stage();
      window.setTimeout(function () {
        if (busy && stage() === s) setNote(waiting);
      }, WAITING_NOTE_MS);
    }
  }

  // → and autoplay: the next step, after filling in Link on screen when that step completes it.
  function advance() {
    if (busy) {
      queued = advance; // pressed while the step loads: it runs once the stage is drawn
      return;
    }
    if (driver) {
      driver.hurry = true; // faster, still on screen: never a completion out of sight
      showState();
      return;
    }
    var form = find('[data-stage-form="next"]');
    if (!form) return;
    if (form.dataset.drive && linkFrame()) drive(form);
    else submit(form);
  }

  function follow(link) {
    if (!link) return;
    if (busy) {
      queued = function () {
        follow(find('[data-stage-link="back"]'));
      };
      return;
    }
    go(link.href);
  }

  function find(selector) {
    var s = stage();
    return s ? s.querySelector(selector) : null;
  }

  // r: the story again on fresh data; autoplay stops there, so the presenter can talk before a or →.
  function restart() {
    document.documentElement.classList.remove("autoplay");
    window.clearTimeout(autoplayTimer);
    submit(find('[data-stage-form="restart"]'));
  }

  // Copy buttons (a profile's stage-picker): the clipboard API where the page may use it (https, localhost),
  // else the older selection copy; the status line says which worked.
  function copyText(text) {
    var status = document.querySelector("[data-copied]");
    function said(message) {
      if (status) status.textContent = message;
    }
    function fallback() {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "visually-hidden";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (err) {
        ok = false;
      }
      area.remove();
      said(ok ? "Copied: " + text : "Copy it by hand: " + text);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () {
        said("Copied: " + text);
      }, fallback);
    } else {
      fallback();
    }
  }

  function toggleFullscreen() {
    if (document.fullscreenElement) document.exitFullscreen();
    else if (document.documentElement.requestFullscreen) document.documentElement.requestFullscreen();
  }

  // --- Driving Link in the phone -----------------------------------------------------------------------

  function Stop(reason) {
    this.reason = reason;
    this.message = "stopped (" + reason + ")";
  }

  function takeOver() {
    if (driver && !driver.cancelled) driver.cancelled = "takeover";
  }

  function drive(form) {
    var plan;
    try {
      plan = JSON.parse(form.dataset.drive);
    } catch (err) {
      submit(form);
      return;
    }
    var run = { cancelled: null, hurry: false };
    driver = run;
    showWaiting(false);
    window.clearTimeout(autoplayTimer);
    stage().classList.add("is-driving");
    setNote("");
    showState();

    function done() {
      if (driver === run) driver = null;
      var s = stage();
      if (s) s.classList.remove("is-driving");
      hideTap();
      showState();
    }

    fillInLink(run, plan).then(
      function () {
        done();
        submit(form);
      },
      function (err) {
        done();
        var reason = err instanceof Stop ? err.reason : null;
        if (reason === "stop") return; // another key press is already taking the stage elsewhere
        if (reason === "takeover") {
          setNote("Link is yours: finish it by hand, or press → to let the stage finish it.");
          return;
        }
        if (window.console) window.console.warn("Presenter: Link could not be driven in the phone:", err);
        // The room reads the caption area: a calm line, never an error's text (a prospect took "could not
        // be driven: Link did not move on from its login screen" for a broken product).
        pendingNote = "Link finished for the customer.";
        pendingDetail =
          "For you only: the phone could not be filled in (" + err.message + "), so the server completed Link.";
        submit(form); // the step completes Link headlessly from wherever it stands
      }
    );
  }

  function check(run) {
    if (run.cancelled) throw new Stop(run.cancelled);
  }

  function sleep(run, ms) {
    return new Promise(function (resolve, reject) {
      var end = Date.now() + ms;
      (function tick() {
        if (run.cancelled) return reject(new Stop(run.cancelled));
        var left = end - Date.now();
        if (left <= 0) return resolve();
        window.setTimeout(tick, Math.min(left, 50));
      })();
    });
  }

  function human(run, kind) {
    var ms = PACE[kind] / speed / (run.hurry ? HURRY : 1);
    return sleep(run, kind === "type" ? ms * (0.6 + Math.random() * 0.8) : ms);
  }

  // Wait until `test()` returns something truthy (checked every 40 ms), or fail with `what`.
  function waitFor(run, test, what, timeout) {
    return new Promise(function (resolve, reject) {
      var end = Date.now() + (timeout || SCREEN_TIMEOUT_MS);
      (function poll() {
        if (run.cancelled) return reject(new Stop(run.cancelled));
        var found;
        try {
          found = test();
        } catch (err) {
          return reject(err);
        }
        if (found) return resolve(found);
        if (Date.now() > end) return reject(new Error(what));
        window.setTimeout(poll, 40);
      })();
    });
  }

  function linkDocument() {
    var frame = linkFrame();
    if (!frame) throw new Error("Link was closed");
    var doc = frame.contentDocument; // null if Link were served from another origin: then it is not driven
    if (!doc) throw new Error("Link's page cannot be reached from the stage");
    return doc;
  }

  // The screen Link shows once htmx has settled it (its forms work from then on), or null while loading.
  function settledScreen() {
    var doc = linkDocument();
    if (doc.readyState !== "complete" || !doc.defaultView.htmx) return null;
    var screen = doc.getElementById("link-screen");
    if (!screen || screen.classList.contains("htmx-added") || screen.classList.contains("htmx-settling")) return null;
    return screen;
  }

  function nextScreen(run, previous) {
    return waitFor(
      run,
      function () {
        var screen = settledScreen();
        return screen && screen !== previous ? screen : null;
      },
      "Link did not move on from its " + previous.getAttribute("data-screen") + " screen"
    ).then(function (screen) {
      var alert = screen.querySelector(".screen-body .alert[role=alert]");
      if (alert && screen.getAttribute("data-screen") === previous.getAttribute("data-screen")) {
        throw new Error("Link said: " + alert.textContent.trim());
      }
      return screen;
    });
  }

  // The pointer the audience follows: a round mark over the phone, gliding to each control and pressing it.
  function tapMark() {
    var screen = document.getElementById("phone-screen");
    var mark = document.getElementById("drive-tap");
    if (!mark && screen) {
      mark = document.createElement("span");
      mark.id = "drive-tap";
      mark.className = "tap";
      mark.setAttribute("aria-hidden", "true");
    }
    // The last child of the screen, so it is drawn above Link's overlay.
    if (mark && screen && mark !== screen.lastElementChild) screen.appendChild(mark);
    return mark;
  }

  function hideTap() {
    var mark = document.getElementById("drive-tap");
    if (mark) mark.classList.remove("is-shown", "is-pressing");
  }

  function bringIntoView(el) {
    // Scroll Link's own page only (scrollIntoView would scroll the stage too).
    var win = el.ownerDocument.defaultView;
    var rect = el.getBoundingClientRect();
    if (rect.top < 8 || rect.bottom > win.innerHeight - 8) {
      win.scrollBy(0, rect.top - win.innerHeight / 2 + rect.height / 2);
    }
  }

  // The mark rests on a button's middle (left part of a wide one), and at a field's right end so the typing shows.
  async function pointAt(run, el) {
    bringIntoView(el);
    var frame = linkFrame();
    var screen = document.getElementById("phone-screen");
    var mark = tapMark();
    if (!frame || !screen || !mark) return;
    var f = frame.getBoundingClientRect();
    var s = screen.getBoundingClientRect();
    var r = el.getBoundingClientRect();
    var k = phoneScale(); // the phone is scaled; Link's own coordinates (r) are the phone's unscaled ones
    var field = el.matches("input:not([type=radio]):not([type=checkbox]), textarea");
    var x = field ? r.width - Math.min(r.height / 2 + 8, r.width / 2) : Math.min(r.width / 2, 60);
    mark.style.left = Math.round((f.left - s.left) / k + r.left + x) + "px";
    mark.style.top = Math.round((f.top - s.top) / k + r.top + r.height / 2) + "px";
    mark.classList.add("is-shown");
    await human(run, "press");
  }

  async function press(run, el, what) {
    check(run);
    if (!el) throw new Error("Link has no " + what + " to press");
    await pointAt(run, el);
    var mark = tapMark();
    var style = el.style;
    var saved = [style.transform, style.boxShadow, style.transition];
    style.transition = "transform 90ms ease-out";
    style.transform = "scale(0.95)";
    style.boxShadow = "0 0 0 4px " + (stage() ? stage().dataset.brandColor : "#0f766e");
    if (mark) mark.classList.add("is-pressing");
    await human(run, "press").finally(function () {
      style.transform = saved[0];
      style.boxShadow = saved[1];
      style.transition = saved[2];
      if (mark) mark.classList.remove("is-pressing");
    });
    check(run);
    el.click();
  }

  async function type(run, input, text, what) {
    check(run);
    if (!input) throw new Error("Link has no " + what + " field");
    await pointAt(run, input);
    input.focus({ preventScroll: true });
    var win = input.ownerDocument.defaultView;
    input.value = "";
    var chars = Array.from(String(text == null ? "" : text));
    for (var i = 0; i < chars.length; i++) {
      await human(run, "type");
      input.value += chars[i];
      input.dispatchEvent(new win.Event("input", { bubbles: true }));
    }
    input.dispatchEvent(new win.Event("change", { bubbles: true }));
  }

  function primary(screen) {
    return screen.querySelector(".screen-body button.primary");
  }

  function q(screen, selector) {
    return screen.querySelector(selector);
  }

  function cssValue(text) {
    return String(text).replace(/["\\]/g, "\\$&");
  }

  // Each Link screen, answered as console.link.headless answers the same flow state.
  var SCREENS = {
    intro: function (run, screen) {
      return press(run, primary(screen), "Continue button");
    },
    matching: function () {
      return Promise.resolve(); // Link moves on by itself once matching is done
    },
    search: async function (run, screen, plan) {
      var search = plan.search;
      if (!search) throw new Error("the step's scenario names no employer or platform to search");
      var box = q(screen, "#search-q");
      await type(run, box, search.text, "search");
      var selector = '.choice[data-kind="' + cssValue(search.kind) + '"][data-id="' + cssValue(search.id) + '"]';
      // htmx asks for results 200 ms after the last letter: wait for the answer to what was typed.
      await sleep(run, 300);
      var retried = false;
      var started = Date.now();
      var choice = await waitFor(
        run,
        function () {
          if (box.classList.contains("htmx-request")) return null;
          var found = q(screen, selector);
          if (!found && !retried && Date.now() - started > 2500) {
            retried = true; // the input event may have landed before htmx listened: ask again, as a person would
            box.dispatchEvent(new box.ownerDocument.defaultView.Event("search", { bubbles: true }));
          }
          return found;
        },
        "Link's search found no " + search.text,
        6000
      );
      await human(run, "read");
      return press(run, choice, search.text + " in the results");
    },
    matches: function (run, screen, plan) {
      var c = plan.completion || {};
      var id = c.matched_platform_id || c.platform_id;
      var choice = id ? q(screen, '.choice[data-platform-id="' + cssValue(id) + '"]') : q(screen, ".choice");
      return press(run, choice, "matched platform");
    },
    mfa_method: async function (run, screen, plan) {
      var method = (plan.completion.mfa || {}).method;
      var radio = method ? q(screen, 'input[name="method"][value="' + cssValue(method) + '"]') : null;
      if (radio && !radio.checked) await press(run, radio, "verification method");
      return press(run, primary(screen), "Send code button");
    },
    login: async function (run, screen, plan) {
      var creds = plan.completion.credentials || {};
      await type(run, q(screen, "#username"), creds.username, "username");
      await type(run, q(screen, "#password"), creds.password, "password");
      return press(run, primary(screen), "Log in button");
    },
    mfa: async function (run, screen, plan) {
      await type(run, q(screen, "#code"), (plan.completion.mfa || {}).code, "verification code");
      return press(run, primary(screen), "Verify button");
    },
    federal: async function (run, screen, plan) {
      var who = plan.completion.federal || {};
      await type(run, q(screen, "#first_name"), who.first_name, "first name");
      await type(run, q(screen, "#last_name"), who.last_name, "last name");
      await type(run, q(screen, "#ssn"), who.social_security_number, "Social Security number");
      return press(run, primary(screen), "Continue button");
    },
    allocation: async function (run, screen, plan) {
      var allocation = plan.completion.allocation || { type: "full" };
      var radio = q(screen, 'input[type="radio"][name="type"][value="' + cssValue(allocation.type) + '"]');
      if (allocation.type === "amount" && q(screen, "#amount")) {
        await type(run, q(screen, "#amount"), (allocation.value / 100).toFixed(2), "amount");
      } else if (allocation.type === "percent" && q(screen, "#percent")) {
        await type(run, q(screen, "#percent"), allocation.value, "percentage");
      } else if (radio) {
        await press(run, radio, "allocation choice");
      }
      var target = q(screen, "#target_index");
      if (target && allocation.target_index) target.value = String(allocation.target_index);
      return press(run, primary(screen), "Continue button");
    },
    confirm: function (run, screen) {
      return press(run, primary(screen), "Confirm button");
    },
  };

  async function fillInLink(run, plan) {
    var screen = await waitFor(run, settledScreen, "Link did not open in the phone");
    for (var i = 0; i < 30; i++) {
      var name = screen.getAttribute("data-screen");
      if (name === "success" || name === "error") {
        // The flow has ended (a switch that failed at once ends on Link's error screen): the audience reads
        // the last screen, then the person closes Link as they would.
        await human(run, "done");
        await press(run, primary(screen), name === "success" ? "Done button" : "Close button");
        await waitFor(
          run,
          function () {
            return !linkFrame();
          },
          "Link did not close after Done",
          5000
        ).catch(function (err) {
          if (err instanceof Stop) throw err;
          if (window.Link) window.Link.close();
        });
        return;
      }
      var act = SCREENS[name];
      if (!act) throw new Error("Link shows a screen the stage cannot fill in (" + name + ")");
      await human(run, "read");
      await act(run, screen, plan);
      screen = await nextScreen(run, screen);
    }
    throw new Error("Link did not finish");
  }

  // --- Events ------------------------------------------------------------------------------------------

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("[data-stage-form]");
    if (!form) return;
    event.preventDefault();
    if (form.dataset.stageForm === "next") advance();
    else if (form.dataset.stageForm === "restart") restart();
    else submit(form);
  });

  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-stage-link]");
    if (link) {
      event.preventDefault();
      follow(link);
      return;
    }
    if (event.target.closest("[data-fullscreen]")) toggleFullscreen();
    if (event.target.closest("[data-toggle-controls]")) document.documentElement.classList.toggle("show-controls");
    if (event.target.closest("[data-print]")) window.print();
    var copy = event.target.closest("[data-copy]");
    if (copy) copyText(copy.dataset.copy);
    var button = event.target.closest("[data-link-button]");
    if (button) openLink(button.dataset.linkToken);
  });

  document.body.addEventListener("stage-refresh", function () {
    var s = stage();
    if (s && s.dataset.url) go(s.dataset.url);
  });

  document.addEventListener("fullscreenchange", function () {
    // Full screen is for the room: the controls hide (? shows them again).
    if (document.fullscreenElement) document.documentElement.classList.remove("show-controls");
    fitPhone();
  });

  window.addEventListener("resize", fitPhone);

  function onKey(event) {
    if (!stage() || event.ctrlKey || event.metaKey || event.altKey) return; // the stage's keys, on the stage only
    // Keys typed into a field are the field's; while the stage fills in Link, its arrow keys still hurry it.
    var inField = event.target.closest && event.target.closest("input, textarea, select");
    if (inField && !(driver && STORY_KEYS_IN_LINK.indexOf(event.key) >= 0)) return;
    var key = event.key;
    var handled = true;
    if (key === "ArrowRight" || key === " " || key === "PageDown") advance();
    else if (key === "ArrowLeft" || key === "PageUp") follow(find('[data-stage-link="back"]'));
    else if (key === "Enter" && find('[data-stage-form="retry"]')) submit(find('[data-stage-form="retry"]'));
    else if (key === "r") restart();
    else if (key === "f") toggleFullscreen();
    else if (key === "?" || key === "h") document.documentElement.classList.toggle("show-controls");
    else if (key === "s" && find("[data-summary]")) window.location.href = find("[data-summary]").href;
    else if (key === "a") toggleAutoplay();
    else handled = false;
    if (handled) event.preventDefault();
  }

  document.addEventListener("keydown", onKey);

  if (stage() && stage().dataset.url) window.history.replaceState(null, "", withSpeed(window.location.href));
  afterRender();
  document.documentElement.dataset.stageReady = "1";
})();
