// Package docs checks that the documentation runs as written: it extracts the ```console
// blocks of README.md, docs/api.md and docs/operations.md (`$ ` command lines, each
// followed by its expected output) and, in its tests, runs them in order against a dev
// stack of its own, comparing each command's output with the documented one. The
// convention is described in docs/operations.md, "The docs test"; Parse and Match are
// its pure core.
package docs
