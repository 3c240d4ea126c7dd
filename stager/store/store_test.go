package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"drover.dev/bbs/store/storetest"
	"drover.dev/stager/store"
)

func open(t *testing.T, url string) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, url, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func archive(name string) store.Archive {
	return store.Archive{SHA256: fmt.Sprintf("%064x", len(name)), Size: int64(len(name)), BlobKey: "buildpacks/bookworm/" + name + ".zip", Filename: name + ".zip"}
}

// order lists the stack's buildpack names by position, checking positions are 1..n.
func order(t *testing.T, s *store.Store, stack string) []string {
	t.Helper()
	bps, err := s.List(context.Background(), stack)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, b := range bps {
		if b.Position != i+1 {
			t.Fatalf("positions not dense: %s at %d, want %d", b.Name, b.Position, i+1)
		}
		names = append(names, b.Name)
	}
	return names
}

func create(t *testing.T, s *store.Store, name, stack string, pos int) store.Buildpack {
	t.Helper()
	b, err := s.Create(context.Background(), name, stack, pos, archive(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equal(t *testing.T, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestCreateAtPositions(t *testing.T) {
	s := open(t, storetest.NewDatabase(t))
	create(t, s, "go", "bookworm", 0)
	create(t, s, "staticfile", "bookworm", 1)
	create(t, s, "nodejs", "bookworm", 2)
	create(t, s, "binary", "bookworm", 99)
	create(t, s, "busybox", "busybox", 1)
	equal(t, order(t, s, "bookworm"), "staticfile", "nodejs", "go", "binary")
	equal(t, order(t, s, "busybox"), "busybox")
	all, err := s.List(context.Background(), "")
	if err != nil || len(all) != 5 {
		t.Fatalf("List all = %d, %v", len(all), err)
	}
	if _, err := s.Create(context.Background(), "go", "bookworm", 1, archive("go")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate create: %v, want ErrExists", err)
	}
	equal(t, order(t, s, "bookworm"), "staticfile", "nodejs", "go", "binary")
	b := create(t, s, "go", "busybox", 0)
	if b.Position != 2 || b.Stack != "busybox" || b.SHA256 != archive("go").SHA256 || b.CreatedAt.IsZero() {
		t.Fatalf("created %+v", b)
	}
}

func TestUpdateMovesAndReplaces(t *testing.T) {
	s := open(t, storetest.NewDatabase(t))
	for _, n := range []string{"a", "b", "c", "d"} {
		create(t, s, n, "bookworm", 0)
	}
	ctx := context.Background()
	if _, err := s.Update(ctx, "d", "bookworm", 1, nil); err != nil {
		t.Fatal(err)
	}
	equal(t, order(t, s, "bookworm"), "d", "a", "b", "c")
	if _, err := s.Update(ctx, "d", "bookworm", 3, nil); err != nil {
		t.Fatal(err)
	}
	equal(t, order(t, s, "bookworm"), "a", "b", "d", "c")
	if _, err := s.Update(ctx, "a", "bookworm", 50, nil); err != nil {
		t.Fatal(err)
	}
	equal(t, order(t, s, "bookworm"), "b", "d", "c", "a")
	replaced := store.Archive{SHA256: fmt.Sprintf("%064x", 7), Size: 7, BlobKey: "buildpacks/bookworm/b-new.zip", Filename: "b2.zip"}
	b, err := s.Update(ctx, "b", "bookworm", 0, &replaced)
	if err != nil {
		t.Fatal(err)
	}
	if b.Position != 1 || b.SHA256 != replaced.SHA256 || b.BlobKey != replaced.BlobKey || b.Filename != "b2.zip" || b.Size != 7 {
		t.Fatalf("updated %+v", b)
	}
	if _, err := s.Update(ctx, "nope", "bookworm", 1, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
}

func TestDeleteClosesTheGap(t *testing.T) {
	s := open(t, storetest.NewDatabase(t))
	for _, n := range []string{"a", "b", "c"} {
		create(t, s, n, "bookworm", 0)
	}
	ctx := context.Background()
	if err := s.Delete(ctx, "b", "bookworm"); err != nil {
		t.Fatal(err)
	}
	equal(t, order(t, s, "bookworm"), "a", "c")
	if err := s.Delete(ctx, "b", "bookworm"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
	if _, err := s.Get(ctx, "bookworm", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	create(t, s, "d", "bookworm", 2)
	equal(t, order(t, s, "bookworm"), "a", "d", "c")
}

func TestPersistsAcrossReopen(t *testing.T) {
	url := storetest.NewDatabase(t)
	s := open(t, url)
	create(t, s, "nodejs", "bookworm", 0)
	create(t, s, "go", "bookworm", 1)
	s.Close()
	again := open(t, url) // migrating twice is a no-op
	equal(t, order(t, again, "bookworm"), "go", "nodejs")
	b, err := again.Get(context.Background(), "bookworm", "nodejs")
	if err != nil || b.BlobKey != archive("nodejs").BlobKey {
		t.Fatalf("get after reopen: %+v, %v", b, err)
	}
}

func TestConcurrentCreatesKeepPositionsDense(t *testing.T) {
	s := open(t, storetest.NewDatabase(t))
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Go(func() {
			_, err := s.Create(context.Background(), fmt.Sprintf("bp%d", i), "bookworm", 1, archive("x"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := order(t, s, "bookworm"); len(got) != 10 {
		t.Fatalf("got %v", got)
	}
}
