package engine

import (
	"context"

	"drover.dev/executor"
)

// AppendCellLog adds one CELL line to a container's kept log, as the rep does for
// lifecycle news the executor cannot know (e.g. "Cell X requesting replacement for
// instance Y" while the cell evacuates).
func (e *Executor) AppendCellLog(_ context.Context, guid, text string) error {
	e.mu.Lock()
	n, ok := e.nodes[guid]
	e.mu.Unlock()
	if !ok {
		return executor.ErrContainerNotFound
	}
	n.cellLog("%s", text)
	return nil
}
