package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	stagerv1 "drover.dev/proto/gen/drover/stager/v1"
	"drover.dev/stager/staging"
	"drover.dev/stager/store"
)

// notRegistered is the NotFound of a buildpack the stack does not have.
func notRegistered(name, stack string) error {
	return status.Errorf(codes.NotFound, "buildpack %q is not registered for stack %q", name, stack)
}

// validateBuildpack checks the name, stack, position and filename of a buildpack
// request, naming every bad field.
func (s *Server) validateBuildpack(name, stack string, position int32, filename string) error {
	var bad []string
	if !staging.ValidBuildpackName(name) {
		bad = append(bad, fmt.Sprintf("name: %s, got %q", staging.BuildpackNameRule(), name))
	}
	if _, ok := s.cfg.Stack(stack); !ok {
		bad = append(bad, fmt.Sprintf("stack: unknown stack %q; known: %s", stack, strings.Join(s.cfg.StackNames(), ", ")))
	}
	if position < 0 {
		bad = append(bad, fmt.Sprintf("position: must be 0 (last) or more, got %d", position))
	}
	if len(filename) > staging.MaxFilenameLen {
		bad = append(bad, fmt.Sprintf("filename: must be at most %d bytes, got %d", staging.MaxFilenameLen, len(filename)))
	}
	if len(bad) > 0 {
		return status.Error(codes.InvalidArgument, strings.Join(bad, "; "))
	}
	return nil
}

// upload inspects an archive and stores it as the blob
// buildpacks/STACK/NAME-SHA256PREFIX.EXT.
func (s *Server) upload(ctx context.Context, name, stack string, archive []byte, filename string) (store.Archive, error) {
	format, err := staging.InspectArchive(archive)
	if err != nil {
		return store.Archive{}, status.Error(codes.InvalidArgument, err.Error())
	}
	sum := sha256.Sum256(archive)
	sha := hex.EncodeToString(sum[:])
	key := fmt.Sprintf("buildpacks/%s/%s-%s.%s", stack, name, sha[:16], format)
	if err := s.opts.Files.UploadBlob(ctx, key, bytes.NewReader(archive), int64(len(archive))); err != nil {
		return store.Archive{}, status.Errorf(codes.Unavailable, "storing the buildpack archive: %v", err)
	}
	return store.Archive{SHA256: sha, Size: int64(len(archive)), BlobKey: key, Filename: filename}, nil
}

// ListBuildpacks lists the buildpacks of a stack (or all) by stack and position.
func (s *Server) ListBuildpacks(ctx context.Context, req *stagerv1.ListBuildpacksRequest) (*stagerv1.ListBuildpacksResponse, error) {
	bps, err := s.opts.Store.List(ctx, req.GetStack())
	if err != nil {
		return nil, s.internal("list-buildpacks", err)
	}
	resp := &stagerv1.ListBuildpacksResponse{}
	for _, b := range bps {
		resp.Buildpacks = append(resp.Buildpacks, toProto(b))
	}
	return resp, nil
}

// CreateBuildpack registers a new buildpack archive.
func (s *Server) CreateBuildpack(ctx context.Context, req *stagerv1.CreateBuildpackRequest) (*stagerv1.CreateBuildpackResponse, error) {
	if err := s.validateBuildpack(req.GetName(), req.GetStack(), req.GetPosition(), req.GetFilename()); err != nil {
		return nil, err
	}
	if _, err := s.opts.Store.Get(ctx, req.GetStack(), req.GetName()); err == nil {
		return nil, alreadyExists(req.GetName(), req.GetStack())
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, s.internal("get-buildpack", err)
	}
	a, err := s.upload(ctx, req.GetName(), req.GetStack(), req.GetArchive(), req.GetFilename())
	if err != nil {
		return nil, err
	}
	b, err := s.opts.Store.Create(ctx, req.GetName(), req.GetStack(), int(req.GetPosition()), a)
	if errors.Is(err, store.ErrExists) {
		return nil, alreadyExists(req.GetName(), req.GetStack())
	}
	if err != nil {
		return nil, s.internal("create-buildpack", err)
	}
	s.logger.Info("buildpack-created", "name", b.Name, "stack", b.Stack, "position", b.Position, "sha256", b.SHA256)
	return &stagerv1.CreateBuildpackResponse{Buildpack: toProto(b)}, nil
}

// UpdateBuildpack moves a buildpack and/or replaces its archive.
func (s *Server) UpdateBuildpack(ctx context.Context, req *stagerv1.UpdateBuildpackRequest) (*stagerv1.UpdateBuildpackResponse, error) {
	if err := s.validateBuildpack(req.GetName(), req.GetStack(), req.GetPosition(), req.GetFilename()); err != nil {
		return nil, err
	}
	if _, err := s.opts.Store.Get(ctx, req.GetStack(), req.GetName()); errors.Is(err, store.ErrNotFound) {
		return nil, notRegistered(req.GetName(), req.GetStack())
	} else if err != nil {
		return nil, s.internal("get-buildpack", err)
	}
	var replaced *store.Archive
	if len(req.GetArchive()) > 0 {
		a, err := s.upload(ctx, req.GetName(), req.GetStack(), req.GetArchive(), req.GetFilename())
		if err != nil {
			return nil, err
		}
		replaced = &a
	}
	b, err := s.opts.Store.Update(ctx, req.GetName(), req.GetStack(), int(req.GetPosition()), replaced)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notRegistered(req.GetName(), req.GetStack())
	}
	if err != nil {
		return nil, s.internal("update-buildpack", err)
	}
	s.logger.Info("buildpack-updated", "name", b.Name, "stack", b.Stack, "position", b.Position, "sha256", b.SHA256)
	return &stagerv1.UpdateBuildpackResponse{Buildpack: toProto(b)}, nil
}

// DeleteBuildpack removes a buildpack from its stack's list (its blob stays).
func (s *Server) DeleteBuildpack(ctx context.Context, req *stagerv1.DeleteBuildpackRequest) (*stagerv1.DeleteBuildpackResponse, error) {
	if err := s.validateBuildpack(req.GetName(), req.GetStack(), 0, ""); err != nil {
		return nil, err
	}
	err := s.opts.Store.Delete(ctx, req.GetName(), req.GetStack())
	if errors.Is(err, store.ErrNotFound) {
		return nil, notRegistered(req.GetName(), req.GetStack())
	}
	if err != nil {
		return nil, s.internal("delete-buildpack", err)
	}
	s.logger.Info("buildpack-deleted", "name", req.GetName(), "stack", req.GetStack())
	return &stagerv1.DeleteBuildpackResponse{}, nil
}

func alreadyExists(name, stack string) error {
	return status.Errorf(codes.AlreadyExists, "buildpack %q is already registered for stack %q", name, stack)
}

// internal logs err and returns an Internal status.
func (s *Server) internal(op string, err error) error {
	s.logger.Error(op+"-failed", "error", err.Error())
	return status.Errorf(codes.Internal, "%s: %v", op, err)
}

func toProto(b store.Buildpack) *stagerv1.Buildpack {
	return &stagerv1.Buildpack{Name: b.Name, Stack: b.Stack, Position: int32(b.Position), Sha256: b.SHA256, Size: b.Size,
		BlobKey: b.BlobKey, Filename: b.Filename, CreatedAt: b.CreatedAt.UnixNano(), UpdatedAt: b.UpdatedAt.UnixNano()}
}
