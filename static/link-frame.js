/* Runs inside the Link page: relays the client events the server attaches to each screen to the
 * embedding page (only to the origin it declared, only after its SDK has answered), moves focus to
 * each new screen, and closes on Escape. Standalone (no parent), events simply stay local. */
(function () {
  "use strict";

  var body = document.body;
  var parentOrigin = body.getAttribute("data-parent-origin") || "";
  var embedded = window.parent !== window && parentOrigin !== "";
  var ready = false;
  var queue = [];

  function post(message) {
    // targetOrigin is the declared parent origin: if the real parent differs, the browser drops it.
    window.parent.postMessage(message, parentOrigin);
  }

  function send(name, payload) {
    if (!embedded) return;
    var message = { source: "payroll-link", type: "event", name: name, payload: payload || {} };
    if (ready) post(message);
    else queue.push(message);
  }

  function currentScreen() {
    return document.getElementById("link-screen");
  }

  function relayScreenEvents() {
    var screen = currentScreen();
    if (!screen || screen.getAttribute("data-events-sent") === "1") return;
    screen.setAttribute("data-events-sent", "1");
    var events = [];
    try {
      events = JSON.parse(screen.getAttribute("data-events") || "[]");
    } catch (err) {
      events = [];
    }
    events.forEach(function (event) {
      send(event.name, event.payload);
    });
  }

  function focusHeading() {
    var heading = document.getElementById("screen-title");
    if (heading) heading.focus({ preventScroll: false });
  }

  window.addEventListener("message", function (event) {
    // Only the embedding window, from the origin it declared, may talk to Link.
    if (!embedded || event.source !== window.parent || event.origin !== parentOrigin) return;
    var data = event.data;
    if (!data || data.source !== "payroll-link-sdk") return;
    if (data.type === "init" && !ready) {
      ready = true;
      queue.splice(0).forEach(post);
    } else if (data.type === "close") {
      closeLink();
    } else if (data.type === "focus") {
      var controls = focusable();
      var target = data.edge === "last" ? controls[controls.length - 1] : controls[0];
      if (target) target.focus();
    }
  });

  function closeLink() {
    var close = document.querySelector("#link-screen .close");
    if (close) close.click();
  }

  // What Tab can reach on the current screen, in order.
  function focusable() {
    var selector = 'a[href], button:not([disabled]), input:not([disabled]):not([type="hidden"]), ' +
      'select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';
    return Array.prototype.filter.call(document.querySelectorAll(selector), function (el) {
      return el.getClientRects().length > 0;
    });
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target && target.closest && target.closest("[data-local-exit]")) {
      // No usable token: nothing to record server-side, so the exit is reported from here.
      var screen = currentScreen();
      send("exit", { screen: screen ? screen.getAttribute("data-screen") : null, completed: false });
      if (!embedded && screen) screen.querySelector(".screen-body").textContent = "You can close this window.";
    }
  });

  // The search term, kept for this tab per Link token: a reload while someone is typing (a presenter's
  // stage reopened mid-search) comes back with the term and its results instead of an empty box.
  var SEARCH_KEY = "payroll-link-search:" + (body.getAttribute("data-link-token-id") || "");

  function storage() {
    try {
      return window.sessionStorage;
    } catch (err) {
      return null; // storage refused (a sandboxed or privacy-restricted frame): nothing is restored
    }
  }

  function restoreSearch() {
    var box = document.getElementById("search-q");
    var store = storage();
    if (!box || box.value || !store || !window.htmx) return;
    var term = store.getItem(SEARCH_KEY);
    if (!term) return;
    box.value = term;
    window.htmx.trigger(box, "search"); // the results for the term, as when it was typed
  }

  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "search-q") {
      var store = storage();
      if (store) {
        try {
          store.setItem(SEARCH_KEY, event.target.value);
        } catch (err) {
          /* storage full or refused: the term is simply not kept */
        }
      }
    }
    // Typing an amount or a percentage picks that option, so the choice matches what was typed.
    var kind = event.target && event.target.getAttribute && event.target.getAttribute("data-selects");
    var form = kind && event.target.form;
    var radio = form && form.querySelector('input[type="radio"][name="type"][value="' + kind + '"]');
    if (radio) radio.checked = true;
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") return closeLink();
    if (event.key !== "Tab" || !embedded) return;
    // Link is a modal dialog: Tab past the last control comes back to the first (the close button), and
    // Shift+Tab before the first goes to the last, instead of leaving for the page underneath.
    var controls = focusable();
    if (!controls.length) return;
    var first = controls[0];
    var last = controls[controls.length - 1];
    var active = document.activeElement;
    var outside = controls.indexOf(active) === -1 && active !== document.getElementById("screen-title");
    if (event.shiftKey && (active === first || outside)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && active === last) {
      event.preventDefault();
      first.focus();
    }
  });

  // Each result's colour, through the CSSOM: a style attribute broke the page's CSP (style-src 'self'), one
  // console error a result, and the swatch stayed blank.
  function paintSwatches() {
    var swatches = document.querySelectorAll(".swatch[data-color]");
    for (var i = 0; i < swatches.length; i++) {
      var color = swatches[i].getAttribute("data-color");
      if (/^#[0-9a-fA-F]{3,8}$/.test(color)) swatches[i].style.backgroundColor = color;
    }
  }
  paintSwatches();

  body.addEventListener("htmx:afterSettle", function (event) {
    paintSwatches();
    relayScreenEvents();
    // Search results arriving are not a new screen: the person typing keeps the focus in the search box
    // (taking it to the heading sent the rest of what they typed nowhere).
    if (event.target && event.target.id === "search-results") return;
    focusHeading();
  });

  body.addEventListener("htmx:responseError", function () {
    var screen = currentScreen();
    if (!screen || screen.querySelector(".alert.network")) return;
    var alert = document.createElement("div");
    alert.className = "alert network";
    alert.setAttribute("role", "alert");
    alert.textContent = "Something went wrong. Please try again.";
    screen.querySelector(".screen-body").prepend(alert);
  });

  // Once htmx has processed the page it loaded (not on each swap: a screen reached by a step starts empty).
  if (window.htmx) {
    var restored = false;
    window.htmx.onLoad(function () {
      if (restored) return;
      restored = true;
      restoreSearch();
    });
  }

  var first = currentScreen();
  send("open", {
    link_token_id: body.getAttribute("data-link-token-id") || null,
    mode: body.getAttribute("data-mode") || null,
    screen: first ? first.getAttribute("data-screen") : null,
  });
  relayScreenEvents();
  focusHeading();
  if (embedded) post({ source: "payroll-link", type: "ready" });
})();
