package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockID is the advisory lock that serialises migrations of concurrent BBS starts.
const migrationLockID = 0x64726f766572 // "drover"

// encryptionLabelKey is the configurations row naming the key every encrypted column is under.
const encryptionLabelKey = "encryption_key_label"

// encryptedColumn is a column that holds crypt blobs.
type encryptedColumn struct{ table, column string }

var encryptedColumns = []encryptedColumn{
	{"desired_lrps", "run_info"},
	{"tasks", "task_definition"},
	{"events", "payload"},
}

// rotationBatch is how many rows one re-encryption transaction rewrites.
const rotationBatch = 500

// Migrate applies the embedded SQL migrations under a Postgres session lock (so
// concurrent BBS starts serialise), then makes sure every encrypted column is under the
// active key: rows under another label are re-encrypted and the active label is
// recorded. It refuses to continue when the recorded label has no configured key.
func (p *Postgres) Migrate(ctx context.Context) error {
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(p.pool)
	defer db.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("store: loading migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return fmt.Errorf("store: migrating: %w", err)
	}
	for _, r := range results {
		p.logger.Info("applied-migration", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration.String())
	}
	return p.rotateEncryptionKey(ctx)
}

// rotateEncryptionKey re-encrypts every blob that is not under the active key, batch by
// batch, then records the active label.
func (p *Postgres) rotateEncryptionKey(ctx context.Context) error {
	active := p.crypt.ActiveLabel()
	var stored string
	err := p.pool.QueryRow(ctx, `SELECT value FROM configurations WHERE id = $1`, encryptionLabelKey).Scan(&stored)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("store: reading the encryption key label: %w", err)
	}
	if stored == active {
		return nil
	}
	if stored != "" && !p.crypt.HasKey(stored) {
		return fmt.Errorf("store: data is encrypted under key %q, which is not configured; refusing to start", stored)
	}
	p.logger.Info("rotating-encryption-key", "from", stored, "to", active)
	for _, col := range encryptedColumns {
		total := 0
		for {
			n, err := p.reencryptBatch(ctx, col)
			if err != nil {
				return fmt.Errorf("store: re-encrypting %s.%s: %w", col.table, col.column, err)
			}
			total += n
			if n < rotationBatch {
				break
			}
		}
		p.logger.Info("re-encrypted-column", "table", col.table, "column", col.column, "rows", total)
	}
	return p.write(ctx, "record-encryption-key-label", func(w *writeTx) error {
		_, err := w.Exec(ctx, `INSERT INTO configurations (id, value) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value`, encryptionLabelKey, active)
		return err
	})
}

// reencryptBatch rewrites up to rotationBatch blobs of a column that are under another
// label than the active one (the label is the blob's first 1+n bytes).
func (p *Postgres) reencryptBatch(ctx context.Context, col encryptedColumn) (int, error) {
	active := []byte(p.crypt.ActiveLabel())
	query := fmt.Sprintf(`SELECT ctid, %[2]s FROM %[1]s
WHERE substring(%[2]s FROM 2 FOR get_byte(%[2]s, 0)) <> $1 LIMIT %[3]d FOR UPDATE SKIP LOCKED`,
		col.table, col.column, rotationBatch)
	update := fmt.Sprintf(`UPDATE %s SET %s = $2 WHERE ctid = $1`, col.table, col.column)
	n := 0
	err := p.write(ctx, "re-encrypt-batch", func(w *writeTx) error {
		rows, err := w.Query(ctx, query, active)
		if err != nil {
			return err
		}
		type blobRow struct {
			tid  pgtype.TID
			blob []byte
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (blobRow, error) {
			var b blobRow
			return b, r.Scan(&b.tid, &b.blob)
		})
		if err != nil {
			return err
		}
		n = len(found)
		if n == 0 {
			return nil
		}
		batch := &pgx.Batch{}
		for _, r := range found {
			plain, err := p.crypt.Decrypt(r.blob)
			if err != nil {
				return err
			}
			blob, err := p.crypt.Encrypt(plain)
			if err != nil {
				return err
			}
			batch.Queue(update, r.tid, blob)
		}
		return w.SendBatch(ctx, batch).Close()
	})
	return n, err
}
