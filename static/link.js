/* Link SDK, version 3.
 *
 *   <script src="https://SERVICE/static/link.js"></script>
 *   Link.open({ linkToken, onSuccess, onLogin, onLoginAttempt, onError, onExit, onEvent });
 *   Link.close();
 *
 * Link opens in a modal iframe served from the same origin as this script. Messages are accepted
 * only from that origin and only from that iframe; the iframe posts only to this page's origin.
 * See docs/link.md for every client event and its payload.
 */
(function (global) {
  "use strict";

  var VERSION = "3.0.0";
  var PREFIXES = { sandbox: "/sandbox", development: "/development", production: "" };
  var CALLBACKS = {
    success: "onSuccess",
    login: "onLogin",
    login_attempt: "onLoginAttempt",
    error: "onError",
    exit: "onExit",
  };
  var script = document.currentScript;
  // Link lives where this script came from, whatever origin the customer page is on.
  var LINK_ORIGIN = new URL(script ? script.src : "/", global.location.href).origin;
  var DEFAULT_MODE = script ? script.getAttribute("data-mode") : null;
  var current = null;

  function linkUrl(token, mode) {
    // Without a mode, /link answers for every token and redirects to the token's own mode.
    var prefix = mode ? PREFIXES[mode] : "";
    if (prefix === undefined) throw new Error("Link.open: mode must be sandbox, development or production");
    var query = "?token=" + encodeURIComponent(token) + "&origin=" + encodeURIComponent(global.location.origin);
    return LINK_ORIGIN + prefix + "/link" + query + "&sdk=" + VERSION;
  }

  function call(fn, args) {
    if (typeof fn !== "function") return;
    try {
      fn.apply(null, args);
    } catch (err) {
      // A failing customer callback must not stop Link; report it where developers look.
      if (global.console) global.console.error("Link callback failed:", err);
    }
  }

  function onMessage(event) {
    if (!current || event.origin !== LINK_ORIGIN || event.source !== current.iframe.contentWindow) return;
    var data = event.data;
    if (!data || data.source !== "payroll-link") return;
    if (data.type === "ready") {
      current.iframe.contentWindow.postMessage(
        { source: "payroll-link-sdk", type: "init", version: VERSION },
        LINK_ORIGIN
      );
      return;
    }
    if (data.type !== "event" || typeof data.name !== "string") return;
    var options = current.options;
    var payload = data.payload || {};
    call(options[CALLBACKS[data.name]], [payload]);
    call(options.onEvent, [data.name, payload]);
    if (data.name === "exit") teardown();
  }

  function teardown() {
    if (!current) return;
    global.removeEventListener("message", onMessage);
    current.overlay.remove();
    document.body.style.overflow = current.bodyOverflow;
    var restore = current.restoreFocus;
    current = null;
    if (restore && typeof restore.focus === "function") restore.focus();
  }

  function open(options) {
    if (!options || typeof options.linkToken !== "string" || !options.linkToken) {
      throw new Error("Link.open needs { linkToken: '<token from POST /v1/link_tokens>' }");
    }
    teardown();
    var overlay = document.createElement("div");
    overlay.setAttribute("data-link-overlay", "");
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    overlay.setAttribute("aria-label", "Link");
    var s = overlay.style;
    s.position = "fixed";
    s.inset = "0";
    s.background = "rgba(15, 23, 42, 0.55)";
    s.display = "flex";
    s.alignItems = "center";
    s.justifyContent = "center";
    s.zIndex = "2147483000";
    var iframe = document.createElement("iframe");
    iframe.title = "Link: update your direct deposit";
    iframe.src = linkUrl(options.linkToken, options.mode || DEFAULT_MODE);
    var f = iframe.style;
    f.width = "min(420px, 100vw)";
    f.height = "min(680px, 100vh)";
    f.border = "0";
    f.borderRadius = "12px";
    f.background = "#fff";
    f.boxShadow = "0 20px 50px rgba(0, 0, 0, 0.35)";
    overlay.appendChild(iframe);
    current = {
      options: options,
      overlay: overlay,
      iframe: iframe,
      bodyOverflow: document.body.style.overflow,
      restoreFocus: document.activeElement,
    };
    global.addEventListener("message", onMessage);
    document.body.style.overflow = "hidden";
    document.body.appendChild(overlay);
    iframe.focus();
  }

  global.Link = { open: open, close: teardown, version: VERSION };
})(window);
