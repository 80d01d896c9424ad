// The bearer token of a service started with one. A browser cannot send it when it
// navigates, so the pages are public and ask for it when the API answers 401; it is kept
// for this tab only (sessionStorage) and sent on the pages' own API calls.
"use strict";
(function () {
  const KEY = "contextfuse.token";

  function token() {
    return sessionStorage.getItem(KEY) || "";
  }

  function askToken(message) {
    const form = document.getElementById("token-form");
    const input = form.querySelector("input");
    form.querySelector(".token-message").textContent = message;
    form.hidden = false;
    input.value = "";
    input.focus();
    return new Promise((resolve) => {
      form.onsubmit = (event) => {
        event.preventDefault();
        sessionStorage.setItem(KEY, input.value.trim());
        form.hidden = true;
        resolve();
      };
    });
  }

  // fetch() with the token; on 401 asks for a token and tries again.
  async function api(path, options) {
    for (;;) {
      const headers = Object.assign({}, (options && options.headers) || {});
      if (token()) headers.Authorization = "Bearer " + token();
      const response = await fetch(path, Object.assign({}, options, { headers }));
      if (response.status !== 401) return response;
      await askToken(
        token() ? "The server refused that token; try again." : "This server needs its bearer token.",
      );
    }
  }

  window.contextfuseAuth = { api, token };
})();
