/* The console's few behaviours: copy buttons, confirmations, the Link launcher with its client-event
   stream, and the live parts: countdowns, the ticking workspace clock, polling paused in hidden tabs. Everything else is server-rendered and swapped by htmx. Event delegation, so fragments htmx
   swaps in work without re-binding. */
(function () {
  "use strict";

  function announce(text) {
    var region = document.getElementById("announcer");
    if (!region) return;
    region.textContent = "";
    // A fresh text node after a tick is what makes screen readers repeat the same message.
    setTimeout(function () { region.textContent = text; }, 30);
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    // Plain-http hosts other than localhost have no Clipboard API: fall back to a hidden textarea.
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { area.remove(); }
    return Promise.resolve();
  }

  function onCopy(button) {
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var label = button.textContent;
    copyText(source.textContent).then(function () {
      button.textContent = "Copied";
      announce("Copied to the clipboard");
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  }

  function eventLine(list, kind, name, payload) {
    var item = document.createElement("li");
    item.className = kind;
    item.setAttribute("data-name", name);
    item.textContent = new Date().toISOString().slice(11, 19) + "  " + name + " " + JSON.stringify(payload || {});
    list.appendChild(item);
    item.scrollIntoView({ block: "nearest" });
  }

  var refocusAfterClose = null;

  document.addEventListener("htmx:afterSettle", function () {
    var launcher = refocusAfterClose;
    var active = document.activeElement;
    if (!launcher || (active && active !== document.body)) return;
    var action = launcher.querySelector("[data-link-state] .actions button, [data-link-state] .actions a");
    if (!action) return;
    refocusAfterClose = null;
    action.focus();
  });

  /* Focus and announcements across htmx swaps. A swap that replaces the element holding the focus (a form
     that redraws itself, a polled panel redrawn while a keyboard user is in it) would drop the focus on
     <body>: a keyboard user starts again from the top of the page, a screen reader loses its place. htmx
     itself puts it back only on an element with an id. So before the swap the focused element is described
     (what it is and what it does), and after it, when the focus is on <body>: the swapped content's
     [data-swap-focus] (the result or the message of a form), else the same control redrawn, else the
     swapped region itself. */
  var pendingFocus = null;
  var CONTROLS = "summary, button:not([disabled]), a[href], input:not([type=hidden]), select, textarea";

  function focusKey(el) {
    var form = el.closest("form");
    return [el.tagName, el.id, el.getAttribute("name") || "", el.getAttribute("href") || "",
      el.getAttribute("hx-post") || el.getAttribute("hx-get") || "",
      el.getAttribute("aria-label") || "", el.tagName === "SELECT" || el.tagName === "TEXTAREA" ? "" : el.textContent.trim(),
      form ? form.getAttribute("action") || "" : ""].join("\u0001");
  }

  function focusable(el) {
    return el && el.isConnected && !el.disabled && !el.closest("[hidden]") && el.getClientRects().length > 0;
  }

  function rememberFocus(event) {
    var target = event.detail && event.detail.target;
    var active = document.activeElement;
    if (!target || !active || active === document.body || !target.contains(active)) return;
    pendingFocus = { key: focusKey(active), tag: active.tagName, region: target.id };
  }
  document.addEventListener("htmx:beforeSwap", rememberFocus);
  document.addEventListener("htmx:oobBeforeSwap", rememberFocus);
  // A control that sends a request and is disabled meanwhile (hx-disabled-elt) loses the focus before any
  // swap: it is described when the request leaves instead.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.detail && event.detail.elt;
    var active = document.activeElement;
    if (!source || source.hasAttribute("data-poll") || !active || active === document.body) return;
    if (!source.contains(active)) return;
    var target = event.detail.target;
    pendingFocus = { key: focusKey(active), tag: active.tagName, region: target && target.id };
  });

  function focusOn(el) {
    if (!el.matches("a[href], button, input, select, textarea, summary, [tabindex]")) el.setAttribute("tabindex", "-1");
    el.focus({ preventScroll: !el.hasAttribute("data-swap-focus") });
  }

  function swappedMessage(roots) {
    for (var i = 0; i < roots.length; i++) {
      var root = roots[i];
      if (!root || !root.isConnected || !root.querySelector) continue;
      var found = root.matches("[data-swap-focus]") ? root : root.querySelector("[data-swap-focus]");
      if (found) return found;
    }
    return null;
  }

  function restoreFocus(roots) {
    var wanted = pendingFocus;
    if (!wanted) return;
    // The result of what the focused control did goes first, even where htmx put the focus back on a
    // redrawn field with an id (the label typed before pressing Enter). Only in what was just swapped in.
    var message = swappedMessage(roots);
    if (message) {
      pendingFocus = null;
      focusOn(message);
      message.removeAttribute("data-swap-focus");  // once: a later swap elsewhere does not come back to it
      return;
    }
    var active = document.activeElement;
    if (active && active !== document.body) return;
    pendingFocus = null;
    var same = document.getElementsByTagName(wanted.tag);
    for (var i = 0; i < same.length; i++) {
      if (focusKey(same[i]) === wanted.key && focusable(same[i])) return same[i].focus({ preventScroll: true });
    }
    var region = wanted.region && document.getElementById(wanted.region);
    if (region && focusable(region)) {
      focusOn(region.querySelector("h1, h2, h3") || region.querySelector(CONTROLS) || region);
      return;
    }
    // The region itself was replaced by what it loaded ("Older events" by the older rows): the first of them.
    for (var j = 0; j < roots.length; j++) {
      var root = roots[j];
      if (!root || !root.isConnected || !root.querySelector) continue;
      var first = root.matches(CONTROLS) ? root : root.querySelector(CONTROLS);
      if (first && focusable(first)) return first.focus();
    }
  }

  // Swapped content that says what just happened ([data-announce]: a conformance run's progress, its
  // verdict) is read out through the page's one live region, which stays in place: a live region swapped in
  // whole is not reliably announced. The same text twice in a row (a poll that changed nothing) is not.
  var announced = {};
  function announceSwapped(root) {
    var scope = root && root.querySelectorAll && root !== document ? root : document;
    var found = scope.querySelectorAll("[data-announce]");
    if (root && root.matches && root.matches("[data-announce]")) found = [root].concat([].slice.call(found));
    for (var i = 0; i < found.length; i++) {
      var key = found[i].getAttribute("data-announce") || "page";
      var text = (found[i].getAttribute("data-announce-text") || found[i].textContent).replace(/\s+/g, " ").trim();
      if (text && announced[key] !== text) {
        announced[key] = text;
        announce(text);
      }
    }
  }
  // One swap settles several elements (the target, out-of-band parts), each with its own event: the focus
  // is decided once they all have.
  var settled = [];
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!settled.length) setTimeout(function () { var roots = settled; settled = []; restoreFocus(roots); }, 0);
    settled.push(event.target);
    announceSwapped(event.target);
  });
  document.addEventListener("htmx:oobAfterSwap", function (event) {
    announceSwapped(event.target);
  });
  // What the page says as it loads is read with the page: only what changes afterwards is announced.
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-announce]").forEach(function (el) {
      announced[el.getAttribute("data-announce") || "page"] =
        (el.getAttribute("data-announce-text") || el.textContent).replace(/\s+/g, " ").trim();
    });
  });

  // On a phone a wide table scrolls sideways in its own box (console.css): a keyboard user scrolls it only
  // if it can take the focus, so it does while (and only while) it is wider than its box. Its caption or
  // heading names it when focused.
  function scrollableTables() {
    document.querySelectorAll(".table").forEach(function (table) {
      var scrolls = table.scrollWidth > table.clientWidth + 1;
      if (scrolls && !table.hasAttribute("tabindex")) {
        table.setAttribute("tabindex", "0");
        table.setAttribute("data-scroll-focus", "");
      } else if (!scrolls && table.hasAttribute("data-scroll-focus")) {
        table.removeAttribute("tabindex");
        table.removeAttribute("data-scroll-focus");
      }
    });
  }
  document.addEventListener("DOMContentLoaded", scrollableTables);
  // Chromium scrolls a focused element into view only when none of it shows: one half cut off by the edge of
  // a box that scrolls sideways (the section links' row on a phone, a wide table) stays so. Brought wholly
  // into view instead, so its focus ring shows.
  document.addEventListener("focusin", function (event) {
    var el = event.target;
    for (var box = el.parentElement; box && box !== document.body; box = box.parentElement) {
      if (box.scrollWidth <= box.clientWidth + 1 || !/auto|scroll/.test(getComputedStyle(box).overflowX)) continue;
      var r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
      if (r.left < b.left || r.right > b.left + box.clientLeft + box.clientWidth) {
        el.scrollIntoView({ block: "nearest", inline: "nearest" });
      }
      return;
    }
  });
  document.addEventListener("htmx:afterSettle", scrollableTables);
  window.addEventListener("resize", scrollableTables);

  // Docks the instructions and keeps --link-guide-height, their height, up to date while docked: where they
  // are a strip along the top, console.css hands it to the SDK as --link-inset-top, so Link opens below
  // the strip and never covers it. Returns the function that undocks them.
  function dockGuide(guide) {
    var root = document.documentElement;
    var measure = function () { root.style.setProperty("--link-guide-height", guide.getBoundingClientRect().height + "px"); };
    guide.classList.add("docked");
    measure();
    var observer = window.ResizeObserver ? new window.ResizeObserver(measure) : null;
    if (observer) observer.observe(guide);
    return function () {
      if (observer) observer.disconnect();
      guide.classList.remove("docked");
      root.style.removeProperty("--link-guide-height");
    };
  }

  function openLink(button) {
    if (!window.Link) {
      announce("The Link SDK did not load.");
      return;
    }
    var launcher = button.closest("[data-launcher]");
    var list = launcher.querySelector("[data-client-events]");
    var panel = launcher.querySelector(".client-events");
    // What to enter in Link (looked up at each open: the state panel is swapped when Link closes).
    var guide = launcher.querySelector("[data-link-guide]");
    // Beside the Link modal while it is open, so each client event can be watched as it happens and the
    // instructions read while typing: events to its right, instructions to its left. Narrower than that,
    // the instructions become a strip along the top and Link opens below it (console.css).
    panel.classList.add("docked");
    var undockGuide = guide ? dockGuide(guide) : function () {};
    var callback = function (name) {
      return function (payload) { eventLine(list, "callback", name, payload); };
    };
    window.Link.open({
      linkToken: button.getAttribute("data-link-token"),
      onSuccess: callback("onSuccess"),
      onLogin: callback("onLogin"),
      onLoginAttempt: callback("onLoginAttempt"),
      onError: callback("onError"),
      onExit: function (payload) {
        eventLine(list, "callback", "onExit", payload);
        panel.classList.remove("docked");
        undockGuide();
        // The SDK gave focus back to the opener, but the token's state panel is about to be redrawn (the
        // opener with it): once it is, focus goes to the panel's first action (see htmx:afterSettle below).
        refocusAfterClose = launcher;
        // Lets the checklist and other panels refresh now instead of at their next poll.
        if (window.htmx) window.htmx.trigger(document.body, "link-closed");
      },
      onEvent: function (name, payload) { eventLine(list, "event", name, payload); },
    });
  }

  document.addEventListener("click", function (event) {
    var copy = event.target.closest("[data-copy]");
    if (copy) return onCopy(copy);
    var opener = event.target.closest("[data-link-open]");
    if (opener) openLink(opener);
  });

  // Confirmations ask in the page's own modal <dialog>, not window.confirm: the browser's box says
  // "127.0.0.1:5000 says", cannot be styled and on a projector looks like an error. showModal() keeps focus
  // inside and closes on Escape; its confirming button is named after the button that asked ("Revoke").
  var confirmDialog = null;

  function confirmBox() {
    if (confirmDialog) return confirmDialog;
    function element(tag, attributes, children) {
      var node = document.createElement(tag);
      Object.keys(attributes).forEach(function (name) { node.setAttribute(name, attributes[name]); });
      (children || []).forEach(function (child) { node.appendChild(child); });
      return node;
    }
    var cancel = element("button", { type: "submit", value: "cancel", "class": "button-quiet", autofocus: "" });
    cancel.textContent = "Cancel";
    // method="dialog": either button closes the dialog with its value as returnValue, no handler needed.
    var dialog = element("dialog", { "class": "confirm-dialog", "aria-labelledby": "confirm-dialog-message" }, [
      element("form", { method: "dialog" }, [
        element("p", { id: "confirm-dialog-message" }),
        element("div", { "class": "confirm-actions" }, [
          cancel, element("button", { type: "submit", value: "ok", "class": "confirm-ok" }),
        ]),
      ]),
    ]);
    document.body.appendChild(dialog);
    confirmDialog = dialog;
    return dialog;
  }

  function askToConfirm(form, submitter) {
    var dialog = confirmBox();
    dialog.querySelector("#confirm-dialog-message").textContent = form.getAttribute("data-confirm");
    var label = submitter && submitter.textContent.trim();
    var ok = dialog.querySelector(".confirm-ok");
    ok.textContent = label || "OK";
    ok.classList.toggle("button-danger", !!(submitter && submitter.classList.contains("button-danger")));
    dialog.returnValue = "";
    dialog.onclose = function () {
      dialog.onclose = null;
      if (dialog.returnValue === "ok") {
        form.setAttribute("data-confirmed", "");
        // requestSubmit fires a new submit event, which htmx (or the browser) sends; the mark lets it pass.
        if (submitter && submitter.form === form) form.requestSubmit(submitter); else form.requestSubmit();
      } else if (submitter && document.contains(submitter)) {
        submitter.focus();
      }
    };
    dialog.showModal();
  }

  // Capture phase, so a form waiting for its confirmation is not sent by htmx meanwhile.
  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-confirm]");
    if (!form) return;
    if (form.hasAttribute("data-confirmed")) {
      form.removeAttribute("data-confirmed");
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    askToConfirm(form, event.submitter);
  }, true);

  // A Link token was just created (walkthrough step 3, or "create a new token" in step 4): the result is
  // step 4, where it is opened, so focus goes there and a screen reader hears what happened.
  document.addEventListener("link-token-created", function () {
    var heading = document.getElementById("step-link-title");
    if (!heading) return;
    heading.focus();
    announce("Link token created. Step 4: open Link with it.");
  });

  document.addEventListener("DOMContentLoaded", function () {
    var auto = document.querySelector("[data-link-open][data-autoopen]");
    if (auto) openLink(auto);
  });

  // Live pages poll (hx-trigger="every 2s" on [data-poll]); a hidden tab asks nothing until shown again.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.detail && event.detail.elt;
    if (document.visibilityState !== "visible" && source && source.hasAttribute("data-poll")) {
      event.preventDefault();
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState !== "visible" || !window.htmx) return;
    // Catch up at once instead of waiting for the next tick.
    document.querySelectorAll("[data-poll]").forEach(function (el) { window.htmx.trigger(el, "live-refresh"); });
  });

  /* Countdowns and clocks. The server renders how many seconds are left ([data-due]) and what the
     workspace clock reads ([data-clock-now]); only the time elapsed since is measured here, so the
     visitor's own clock (skewed, or in another time zone) never matters. */
  var DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  // The same format as the server's `clocktime` filter: "Tue 24 Nov 2026 14:02[:05]" (UTC).
  function clockText(date, seconds) {
    var text = DAYS[date.getUTCDay()] + " " + pad(date.getUTCDate()) + " " + MONTHS[date.getUTCMonth()] + " " +
      date.getUTCFullYear() + " " + pad(date.getUTCHours()) + ":" + pad(date.getUTCMinutes());
    return seconds ? text + ":" + pad(date.getUTCSeconds()) : text;
  }

  // "58 s", "1 min 58 s", "3 h 5 min", "2 d 4 h": seconds shown while under an hour, so it visibly counts.
  function durationText(total) {
    var s = Math.max(0, Math.floor(total));  // floor, as the server renders it
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    s = s % 60;
    if (d) return d + " d" + (h ? " " + h + " h" : "");
    if (h) return h + " h" + (m ? " " + m + " min" : "");
    if (m) return m + " min" + (s ? " " + s + " s" : "");
    return s + " s";
  }

  function since(el) {
    if (el._liveStart === undefined) el._liveStart = performance.now();
    return (performance.now() - el._liveStart) / 1000;
  }

  function tick() {
    document.querySelectorAll("[data-due]").forEach(function (el) {
      var left = parseFloat(el.getAttribute("data-due")) - since(el);
      if (isNaN(left)) return;
      el.textContent = left > 0.5
        ? "in " + durationText(left) + (el.getAttribute("data-due-suffix") || "")
        : "due now (the worker runs it within a second)";
    });
    document.querySelectorAll("[data-clock-now]").forEach(function (el) {
      var start = Date.parse(el.getAttribute("data-clock-now"));
      if (isNaN(start)) return;
      el.textContent = clockText(new Date(start + since(el) * 1000), el.hasAttribute("data-clock-seconds"));
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:afterSettle", tick);

  // A refused htmx request (a 4xx or 5xx: a NUL typed into a field, a form sent twice, a busy server) is
  // not swapped in by htmx, so without this the page would not change at all. Its error page's message
  // goes beside the form (or element) that sent it, and leaves with that form's next request.
  // Live polls are left alone: they try again by themselves.
  function refusalMessage(xhr) {
    var found = null;
    try {
      var page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
      found = page.querySelector(".callout-error");
    } catch (e) { /* not HTML: the generic message below */ }
    var text = found && found.textContent.trim();
    return text || "The server refused this request (HTTP " + xhr.status + "). Please try again.";
  }
  function refusalOf(source) {
    // The form that sent the request (or the element itself), and the message placed right after it.
    var sender = source.closest("form") || source;
    var next = sender.nextElementSibling;
    return { sender: sender, alert: next && next.classList.contains("request-refused") ? next : null };
  }
  // A form that creates something is sent once: a double click sent it twice, and made two cohorts or
  // profiles, or for a class's join a second request that was refused as a name clash (the browser showed
  // that refusal, not the join that went through). Marked once the submit is certain to go (no handler
  // stopped it); a page restored from the back-forward cache may be sent again.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.hasAttribute || !form.hasAttribute("data-submit-once")) return;
    if (form.hasAttribute("data-submitted")) {
      event.preventDefault();
      return;
    }
    window.setTimeout(function () {
      if (!event.defaultPrevented) form.setAttribute("data-submitted", "");
    }, 0);
  });
  window.addEventListener("pageshow", function () {
    var sent = document.querySelectorAll("form[data-submitted]");
    for (var i = 0; i < sent.length; i++) sent[i].removeAttribute("data-submitted");
  });
  document.addEventListener("htmx:responseError", function (event) {
    var source = event.detail && event.detail.elt;
    if (!source || source.hasAttribute("data-poll")) return;
    var found = refusalOf(source);
    var alert = found.alert;
    if (!alert) {
      alert = document.createElement("p");
      alert.className = "callout callout-error request-refused";
      alert.setAttribute("role", "alert");
      found.sender.insertAdjacentElement("afterend", alert);
    }
    alert.textContent = refusalMessage(event.detail.xhr);
  });
  // A live poll whose page is gone (404 or 410: the training class was deleted) stops instead of asking
  // every 2 s for ever: the element goes (htmx polls only elements still in the page) and its
  // [data-poll-gone] message takes the top of the page.
  document.addEventListener("htmx:responseError", function (event) {
    var source = event.detail && event.detail.elt;
    var status = event.detail && event.detail.xhr && event.detail.xhr.status;
    if (!source || !source.hasAttribute("data-poll-gone") || (status !== 404 && status !== 410)) return;
    var note = document.createElement("p");
    note.className = "callout callout-error";
    note.id = "poll-gone";
    note.setAttribute("role", "alert");
    note.textContent = source.getAttribute("data-poll-gone");
    var main = source.closest("main") || document.body;
    main.insertBefore(note, main.firstChild);
    source.remove();
    // What only worked while the page existed (the class's join link, Archive, Delete) goes with it.
    var gone = document.querySelectorAll("[data-gone-hide]");
    for (var i = 0; i < gone.length; i++) gone[i].hidden = true;
  });
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.detail && event.detail.elt;
    var alert = source && refusalOf(source).alert;
    if (alert) alert.remove();
  });

  // Busy buttons: the button that sent a request wears aria-busy="true" (a spinner in the CSS) until the
  // answer is in, so the second or so a clock move, a scenario run or a conformance check takes reads as
  // "working", not as a faded, disabled button. Polls are not marked.
  function busyButton(source, triggering) {
    var submitter = triggering && triggering.submitter;
    if (submitter && submitter.tagName === "BUTTON") return submitter;
    if (source.tagName === "BUTTON") return source;
    var active = document.activeElement;
    if (active && active.tagName === "BUTTON" && source.contains(active)) return active;
    var buttons = source.querySelectorAll ? source.querySelectorAll("button[type=submit], button:not([type])") : [];
    return buttons.length === 1 ? buttons[0] : null;
  }
  document.addEventListener("htmx:beforeRequest", function (event) {
    var source = event.detail && event.detail.elt;
    if (!source || source.hasAttribute("data-poll") || event.defaultPrevented) return;
    var config = event.detail.requestConfig || {};
    var button = busyButton(source, config.triggeringEvent);
    if (!button) return;
    button.setAttribute("aria-busy", "true");
    source.__busyButton = button;
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var source = event.detail && event.detail.elt;
    var button = source && source.__busyButton;
    if (!button) return;
    button.removeAttribute("aria-busy");
    source.__busyButton = null;
  });
  // A plain form (no htmx): busy until the next page replaces this one; a form another handler stopped
  // (a declined confirmation, htmx's own) is left alone.
  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    if (event.defaultPrevented || !button || button.tagName !== "BUTTON") return;
    button.setAttribute("aria-busy", "true");
  });
  // Back to a page kept in the browser's cache: nothing is in flight any more.
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("button[aria-busy]").forEach(function (b) { b.removeAttribute("aria-busy"); });
  });
})();
