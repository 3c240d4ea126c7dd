package blobstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ConflictError: a key collides with the stored blobs. Blobs are files and their
// keys' parent segments directories, so a blob cannot sit under another blob
// ("packages/x.zip/y" when "packages/x.zip" is a blob) nor at a key that is a
// directory of blobs ("packages" when "packages/x.zip" is a blob).
type ConflictError struct {
	// Key is the refused key.
	Key string
	// Blob is the stored blob that Key would be under; "" when Key is a directory.
	Blob string
}

func (e *ConflictError) Error() string {
	if e.Blob != "" {
		return fmt.Sprintf("blob key %s: %s is a blob, so it cannot hold other blobs", e.Key, e.Blob)
	}
	return fmt.Sprintf("blob key %s: is a directory of other blobs (%s/...)", e.Key, e.Key)
}

// CheckKey validates key (ValidateKey) and checks that a blob can be stored there
// now: a *ConflictError when a parent segment is a blob or key is a directory of
// blobs. It only looks (lstat of each segment), so it can run before an upload's body
// is read.
func (s *Store) CheckKey(key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	segments := strings.Split(key, "/")
	for i := range segments {
		prefix := strings.Join(segments[:i+1], "/")
		fi, err := os.Lstat(s.blobPath(prefix))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("blob key %s: %w", key, err)
		}
		last := i == len(segments)-1
		switch {
		case last && fi.IsDir():
			return &ConflictError{Key: key}
		case !last && !fi.IsDir():
			return &ConflictError{Key: key, Blob: prefix}
		}
	}
	return nil
}
