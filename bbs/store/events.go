package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"

	"drover.dev/bbs/models"
	modelsv1 "drover.dev/proto/gen/drover/models/v1"
	"google.golang.org/protobuf/proto"
)

// EventsChannel is the LISTEN/NOTIFY channel that announces committed events; the
// payload is the newest committed sequence.
const EventsChannel = "drover_events"

// DefaultEventsLimit is how many events EventsAfter returns when limit is not positive.
const DefaultEventsLimit = 1000

// appendEventsSQL reserves len(events) sequences from the counter row, inserts the
// events and notifies listeners. The counter row stays locked until commit, so
// sequences are gap-free and increase in commit order; taking it is the last step of
// every write so that it is held as briefly as possible.
const appendEventsSQL = `
WITH counter AS (
    UPDATE event_counter SET last_sequence = last_sequence + $1 RETURNING last_sequence
), inserted AS (
    INSERT INTO events (sequence, created_at, event_type, subject, cell_ids, payload)
    SELECT counter.last_sequence - $1 + e.ord, $2, e.event_type, e.subject,
           ARRAY(SELECT jsonb_array_elements_text(e.cell_ids::jsonb)), e.payload
    FROM counter, unnest($3::text[], $4::text[], $5::text[], $6::bytea[])
         WITH ORDINALITY AS e(event_type, subject, cell_ids, payload, ord)
)
SELECT counter.last_sequence FROM counter, pg_notify('` + EventsChannel + `', counter.last_sequence::text)`

// appendEvents stores the queued events; each payload is encrypted before the counter
// is locked.
func (w *writeTx) appendEvents(ctx context.Context) error {
	n := len(w.events)
	if n == 0 {
		return nil
	}
	types := make([]string, n)
	subjects := make([]string, n)
	cells := make([]string, n)
	payloads := make([][]byte, n)
	for i, e := range w.events {
		types[i] = models.EventType(e)
		subjects[i] = models.EventSubject(e)
		cellJSON, err := json.Marshal(nonNil(models.EventCellIDs(e)))
		if err != nil {
			return err
		}
		cells[i] = string(cellJSON)
		e.Sequence, e.CreatedAt = 0, 0
		plain, err := proto.Marshal(e)
		if err != nil {
			return fmt.Errorf("marshalling a %s event: %w", types[i], err)
		}
		if payloads[i], err = w.p.crypt.Encrypt(plain); err != nil {
			return err
		}
	}
	var last int64
	if err := w.QueryRow(ctx, appendEventsSQL, n, w.p.now().UnixNano(), types, subjects, cells, payloads).Scan(&last); err != nil {
		return fmt.Errorf("appending events: %w", err)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// eventsAfterSQL reads the prune watermark and the events in one snapshot, so a
// concurrent prune can never make a gap look like the end of the log.
const eventsAfterSQL = `
SELECT w.pruned_through, e.sequence, e.created_at, e.payload
FROM events_pruned w
LEFT JOIN LATERAL (
    SELECT sequence, created_at, payload FROM events WHERE sequence > $1 ORDER BY sequence LIMIT $2
) e ON true
ORDER BY e.sequence`

// EventsAfter returns up to limit events with sequence > after, in sequence order; a
// limit <= 0 means DefaultEventsLimit. ErrResyncRequired means events after `after`
// were already pruned.
func (p *Postgres) EventsAfter(ctx context.Context, after uint64, limit int) ([]*modelsv1.Event, error) {
	return p.EventPage(ctx, after, limit, 0)
}

// EventPage is EventsAfter that also stops before the event whose stored (encrypted)
// payload would take the page's payload bytes past maxBytes; the page always holds at
// least one event when there is one. maxBytes <= 0 sets no byte budget. Subscribers read
// the log in such pages, so what one of them holds in memory stays bounded however large
// the events are.
func (p *Postgres) EventPage(ctx context.Context, after uint64, limit, maxBytes int) ([]*modelsv1.Event, error) {
	if limit <= 0 {
		limit = DefaultEventsLimit
	}
	if after > 1<<63-1 {
		return nil, invalidRequest("event sequence %d is out of range", after)
	}
	rows, err := p.pool.Query(ctx, eventsAfterSQL, int64(after), limit)
	if err != nil {
		return nil, p.readError("events-after", err)
	}
	defer rows.Close()
	var events []*modelsv1.Event
	var prunedThrough int64
	pageBytes := 0
	for rows.Next() {
		var seq, createdAt *int64
		var payload []byte
		if err := rows.Scan(&prunedThrough, &seq, &createdAt, &payload); err != nil {
			return nil, p.readError("events-after", err)
		}
		if seq == nil {
			break
		}
		pageBytes += len(payload)
		if maxBytes > 0 && len(events) > 0 && pageBytes > maxBytes {
			break // the rest waits for the next page
		}
		e, err := p.decodeEvent(payload)
		if err != nil {
			return nil, p.readError("events-after", fmt.Errorf("event %d: %w", *seq, err))
		}
		e.Sequence, e.CreatedAt = uint64(*seq), *createdAt
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, p.readError("events-after", err)
	}
	if int64(after) < prunedThrough {
		return nil, models.NewError(models.ErrTypeResyncRequired,
			"events up to sequence %d were pruned; cannot resume after %d", prunedThrough, after)
	}
	return events, nil
}

func (p *Postgres) decodeEvent(payload []byte) (*modelsv1.Event, error) {
	plain, err := p.crypt.Decrypt(payload)
	if err != nil {
		return nil, err
	}
	e := &modelsv1.Event{}
	if err := proto.Unmarshal(plain, e); err != nil {
		return nil, err
	}
	return e, nil
}

// LatestSequence is the sequence of the newest committed event (0 if none).
func (p *Postgres) LatestSequence(ctx context.Context) (uint64, error) {
	var last int64
	if err := p.pool.QueryRow(ctx, `SELECT last_sequence FROM event_counter`).Scan(&last); err != nil {
		return 0, p.readError("latest-sequence", err)
	}
	return uint64(last), nil
}

// WaitForEvents holds one pooled connection with LISTEN and calls notify with the newest
// sequence of every notification, and once right after LISTEN starts (so that events
// committed before listening are not missed). It reconnects after errors, with an
// exponential backoff that starts again once a session got as far as listening, until
// ctx ends, then returns ctx.Err(). Call it once per process and fan out from there: it
// holds a connection for as long as it runs.
func (p *Postgres) WaitForEvents(ctx context.Context, notify func(latest uint64)) error {
	if notify == nil {
		return invalidRequest("notify callback is required")
	}
	wait := &backoff.ExponentialBackOff{InitialInterval: 100 * time.Millisecond, RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier: 2, MaxInterval: 5 * time.Second}
	_, _ = backoff.Retry(ctx, func() (struct{}, error) {
		listening, err := p.listen(ctx, notify)
		if listening {
			wait.Reset()
		}
		return struct{}{}, err
	}, backoff.WithBackOff(wait), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, d time.Duration) {
		p.logger.Error("event-listener-failed", "error", err.Error(), "retry_in", d.String())
	}))
	return ctx.Err()
}

// listen runs one LISTEN session; listening reports whether it got as far as listening.
func (p *Postgres) listen(ctx context.Context, notify func(uint64)) (listening bool, err error) {
	conn, err := p.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		// The session has LISTEN state (and may be broken): never hand it back as is.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Conn().Close(closeCtx)
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+EventsChannel); err != nil {
		return false, err
	}
	latest, err := p.LatestSequence(ctx)
	if err != nil {
		return true, err
	}
	notify(latest)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		seq, err := strconv.ParseUint(n.Payload, 10, 64)
		if err != nil {
			p.logger.Error("invalid-event-notification", "payload", n.Payload)
			continue
		}
		notify(seq)
	}
}

// pruneEventsSQL deletes every event up to the newest one that is both older than the
// cutoff time and not among the newest $2 events (so the log stays a suffix) and moves
// the watermark up to it.
const pruneEventsSQL = `
WITH bound AS (
    SELECT LEAST(
        (SELECT max(sequence) FROM events WHERE created_at < $1),
        (SELECT last_sequence FROM event_counter) - $2
    ) AS through
), deleted AS (
    DELETE FROM events WHERE sequence <= (SELECT through FROM bound) RETURNING sequence
), watermark AS (
    UPDATE events_pruned SET pruned_through = GREATEST(pruned_through, (SELECT through FROM bound))
    WHERE (SELECT through FROM bound) IS NOT NULL AND (SELECT through FROM bound) > pruned_through
)
SELECT count(*) FROM deleted`

// PruneEvents deletes events older than olderThan, keeping at least the newest keep
// events, and advances the watermark below which EventsAfter answers ErrResyncRequired.
// It never blocks writers.
func (p *Postgres) PruneEvents(ctx context.Context, olderThan time.Duration, keep int) (int64, error) {
	if keep < 0 {
		keep = 0
	}
	var deleted int64
	err := p.write(ctx, "prune-events", func(w *writeTx) error {
		return w.QueryRow(ctx, pruneEventsSQL, w.now.Add(-olderThan).UnixNano(), keep).Scan(&deleted)
	})
	if err != nil {
		return 0, err
	}
	if deleted > 0 {
		p.logger.Info("pruned-events", "count", deleted)
	}
	return deleted, nil
}
