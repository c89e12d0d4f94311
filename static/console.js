/* The console's few behaviours: copy buttons, confirmations, and the Link launcher with its client-event
   stream. Everything else is server-rendered and swapped by htmx. Event delegation, so fragments htmx
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
    // instructions read while typing: events to its right, instructions to its left.
    panel.classList.add("docked");
    if (guide) guide.classList.add("docked");
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
        if (guide) guide.classList.remove("docked");
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

  // Capture phase, so a refused confirmation also stops htmx from sending the form.
  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.getAttribute("data-confirm"))) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);

  document.addEventListener("DOMContentLoaded", function () {
    var auto = document.querySelector("[data-link-open][data-autoopen]");
    if (auto) openLink(auto);
  });
})();
