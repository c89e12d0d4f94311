/* Link SDK, version 3.
 *
 *   <script src="https://SERVICE/static/link.js"></script>
 *   Link.open({ linkToken, onSuccess, onLogin, onLoginAttempt, onError, onExit, onEvent });
 *   Link.close();
 *
 * Link opens in a modal dialog: an iframe served from the same origin as this script, full screen below
 * 480px wide. A page that keeps a strip of itself visible above Link (an app bar, the console's hints) sets
 * the CSS custom property --link-inset-top to its height: the dialog starts below it. Focus moves into it, stays inside it while it is open (Tab wraps around, the close button
 * included) and returns to the element that opened it; Escape closes it like its close button (onExit).
 * Messages are accepted only from that origin and only from that iframe; the iframe posts only to this
 * page's origin.
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

  // Escape pressed while focus is on the customer page (Link's own page handles it inside the iframe):
  // ask Link to close, so the flow ends and onExit fires exactly as with its close button.
  function onKeydown(event) {
    if (!current || event.key !== "Escape") return;
    event.preventDefault();
    current.iframe.contentWindow.postMessage({ source: "payroll-link-sdk", type: "close" }, LINK_ORIGIN);
  }

  // Below this width Link takes the whole dialog (a phone); above it, a centred panel. Sizes are of the
  // dialog, not of the viewport: the dialog is the viewport less the page's --link-inset-top, and a fixed
  // box follows the visible height under a phone's toolbars.
  var PHONE = "(max-width: 480px)";

  function fit() {
    if (!current) return;
    var phone = global.matchMedia && global.matchMedia(PHONE).matches;
    var f = current.iframe.style;
    f.width = phone ? "100%" : "min(420px, 100%)";
    f.height = phone ? "100%" : "min(680px, 100%)";
    f.borderRadius = phone ? "0" : "12px";
  }

  // Focus cannot leave the dialog: an edge of the overlay that receives focus (Tab past Link's last
  // control, or Shift+Tab before its first) hands it back to Link, which focuses its first or last control.
  function sentinel(edge) {
    var el = document.createElement("span");
    el.tabIndex = 0;
    el.setAttribute("data-link-focus-edge", edge);
    el.style.position = "fixed";
    el.style.width = "1px";
    el.style.height = "1px";
    el.style.overflow = "hidden";
    el.addEventListener("focus", function () {
      if (!current) return;
      current.iframe.focus();
      current.iframe.contentWindow.postMessage(
        { source: "payroll-link-sdk", type: "focus", edge: edge === "start" ? "last" : "first" },
        LINK_ORIGIN
      );
    });
    return el;
  }

  function teardown() {
    if (!current) return;
    global.removeEventListener("message", onMessage);
    global.removeEventListener("resize", fit);
    document.removeEventListener("keydown", onKeydown);
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
    s.top = "var(--link-inset-top, 0px)";
    s.right = s.bottom = s.left = "0";
    s.background = "rgba(15, 23, 42, 0.55)";
    s.display = "flex";
    s.alignItems = "center";
    s.justifyContent = "center";
    s.zIndex = "2147483000";
    var iframe = document.createElement("iframe");
    iframe.title = "Link: update your direct deposit";
    iframe.src = linkUrl(options.linkToken, options.mode || DEFAULT_MODE);
    var f = iframe.style;
    f.border = "0";
    f.background = "#fff";
    f.boxShadow = "0 20px 50px rgba(0, 0, 0, 0.35)";
    overlay.appendChild(sentinel("start"));
    overlay.appendChild(iframe);
    overlay.appendChild(sentinel("end"));
    current = {
      options: options,
      overlay: overlay,
      iframe: iframe,
      bodyOverflow: document.body.style.overflow,
      restoreFocus: document.activeElement,
    };
    fit();
    global.addEventListener("message", onMessage);
    global.addEventListener("resize", fit);
    document.addEventListener("keydown", onKeydown);
    document.body.style.overflow = "hidden";
    document.body.appendChild(overlay);
    iframe.focus();
  }

  global.Link = { open: open, close: teardown, version: VERSION };
})(window);
