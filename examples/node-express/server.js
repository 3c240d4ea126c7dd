// drover example: an Express app. It listens on $PORT (the platform sets it) and answers
// `/` with its version and instance, so a push of v2 is visible through the router.
const express = require("express");

const version = "v1";
const app = express();

app.get("/", (req, res) => {
  const index = process.env.CF_INSTANCE_INDEX || process.env.INSTANCE_INDEX || "0";
  res.type("text/plain").send(`node-express ${version} (instance ${index}, NODE_ENV=${process.env.NODE_ENV || ""})\n`);
});

const port = Number(process.env.PORT || 8080);
const server = app.listen(port, () => console.log(`node-express ${version} listening on ${port}`));

process.on("SIGTERM", () => {
  console.log("node-express: SIGTERM, closing");
  server.close(() => process.exit(0));
});
