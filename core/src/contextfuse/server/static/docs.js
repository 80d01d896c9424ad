// The API docs: the schema is fetched with the token (it stays protected), then Swagger UI
// (vendored in the package) renders it; "Try it out" requests carry the token too.
"use strict";
(async function () {
  const auth = window.contextfuseAuth;
  const response = await auth.api("/openapi.json");
  if (!response.ok) {
    const error = document.getElementById("docs-error");
    error.textContent = "Could not read the API schema: HTTP " + response.status;
    error.hidden = false;
    return;
  }
  const spec = await response.json();
  window.SwaggerUIBundle({
    spec,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    requestInterceptor: (request) => {
      if (auth.token()) request.headers.Authorization = "Bearer " + auth.token();
      return request;
    },
  });
})();
