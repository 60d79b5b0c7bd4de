// Command image builds, pushes and serves ndp's container images without
// Docker, with go-containerregistry:
//
//	image build --out DIR --file /ndp=bin/image/ndp ... [--entrypoint /ndp] [--user 65532:65532]
//	image push --layout DIR --to REGISTRY/REPO[:TAG]      (prints REGISTRY/REPO@sha256:...)
//	image serve --addr 127.0.0.1:5000 --dir DIR            (a registry, blobs on disk)
//	image archive --layout DIR --name REGISTRY/REPO:TAG --out FILE.tar
//
// archive writes the layout's image as an OCI archive that containerd
// imports (ctr images import) under that name: the manifest is the one
// pushed, so the image's digest reference resolves to it without a pull.
//
// build writes an OCI image layout holding one image of one layer and
// prints the image's digest. Everything that could vary between two
// builds of one commit is fixed (entry order, times, owners, modes, gzip
// header), so the same binaries give the same digest.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("image: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: image build|push|serve [flags]")
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "build":
		err = build(args)
	case "push":
		err = push(args)
	case "serve":
		err = serve(args)
	case "archive":
		err = archive(args)
	default:
		err = fmt.Errorf("unknown command %q (build, push, serve, archive)", cmd)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// files collects repeated --file DEST=SRC flags.
type files map[string]string

func (f files) String() string { return fmt.Sprint(map[string]string(f)) }
func (f files) Set(v string) error {
	dst, src, ok := strings.Cut(v, "=")
	if !ok || !path.IsAbs(dst) || src == "" {
		return fmt.Errorf("--file %q: want /PATH/IN/IMAGE=FILE", v)
	}
	f[path.Clean(dst)] = src
	return nil
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	out := fs.String("out", "", "directory of the OCI image layout to write (replaced)")
	entrypoint := fs.String("entrypoint", "", "the image's entrypoint")
	user := fs.String("user", "", "the user the image runs as by default (uid:gid)")
	ref := fs.String("name", "", "org.opencontainers.image.ref.name of the image in the layout's index")
	var labels labelFlags = map[string]string{}
	fs.Var(labels, "label", "KEY=VALUE label of the image (repeatable)")
	fl := files{}
	fs.Var(fl, "file", "/PATH/IN/IMAGE=FILE: a file of the image (repeatable; mode 0755 if FILE is executable, else 0644)")
	_ = fs.Parse(args)
	if *out == "" || len(fl) == 0 {
		return errors.New("build: --out and at least one --file are required")
	}
	layerTar, err := layerTar(fl)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Env = []string{"PATH=/"}
	cf.Config.WorkingDir = "/"
	cf.Config.User = *user
	cf.Config.Labels = labels
	if *entrypoint != "" {
		cf.Config.Entrypoint = []string{*entrypoint}
	}
	cf.History = []v1.History{{Created: cf.Created, CreatedBy: "hack/image build", Comment: strings.Join(sortedKeys(fl), " ")}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	p, err := layout.Write(*out, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if *ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": *ref}))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	compressed, err := layer.Size()
	if err != nil {
		return err
	}
	// The digest alone on stdout (scripts read it); the sizes on stderr.
	fmt.Println(digest)
	fmt.Fprintf(os.Stderr, "image: %s in %s: one layer, %.1f MB uncompressed, %.1f MB compressed\n",
		digest, *out, float64(len(layerTar))/1e6, float64(compressed)/1e6)
	return nil
}

// layerTar is the layer: the files under their paths, their parent
// directories, an empty /tmp (sticky, world-writable: the controller
// writes temporary files as a non-root user), with fixed times and owners.
func layerTar(fl files) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	dirs := map[string]bool{"tmp": true}
	for dst := range fl {
		for d := path.Dir(dst); d != "/"; d = path.Dir(d) {
			dirs[strings.TrimPrefix(d, "/")] = true
		}
	}
	type entry struct {
		hdr *tar.Header
		src string
	}
	var entries []entry
	for d := range dirs {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		entries = append(entries, entry{hdr: &tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode}})
	}
	for dst, src := range fl {
		st, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("--file %s=%s: not a regular file", dst, src)
		}
		mode := int64(0o644)
		if st.Mode()&0o111 != 0 {
			mode = 0o755
		}
		entries = append(entries, entry{hdr: &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dst, "/"), Mode: mode, Size: st.Size()}, src: src})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].hdr.Name < entries[j].hdr.Name })
	for _, e := range entries {
		e.hdr.ModTime, e.hdr.Format = epoch, tar.FormatPAX
		e.hdr.Uname, e.hdr.Gname = "root", "root"
		if err := tw.WriteHeader(e.hdr); err != nil {
			return nil, err
		}
		if e.src == "" {
			continue
		}
		f, err := os.Open(e.src)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.src, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func push(args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	dir := fs.String("layout", "", "the OCI image layout `image build` wrote")
	to := fs.String("to", "", "REGISTRY/REPO[:TAG] to push to")
	insecure := fs.Bool("insecure", false, "plain HTTP (a registry on loopback)")
	_ = fs.Parse(args)
	if *dir == "" || *to == "" {
		return errors.New("push: --layout and --to are required")
	}
	img, err := layoutImage(*dir)
	if err != nil {
		return err
	}
	var nopts []name.Option
	if *insecure {
		nopts = append(nopts, name.Insecure)
	}
	ref, err := name.ParseReference(*to, nopts...)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img); err != nil {
		return fmt.Errorf("pushing to %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref.Context(), digest)
	return nil
}

func archive(args []string) error {
	fs := flag.NewFlagSet("archive", flag.ExitOnError)
	dir := fs.String("layout", "", "the OCI image layout `image build` wrote")
	ref := fs.String("name", "", "REGISTRY/REPO:TAG the importer names the image")
	out := fs.String("out", "", "the archive to write (replaced)")
	_ = fs.Parse(args)
	if *dir == "" || *ref == "" || *out == "" {
		return errors.New("archive: --layout, --name and --out are required")
	}
	if _, err := name.NewTag(*ref, name.StrictValidation); err != nil {
		return fmt.Errorf("archive: --name %q: %w", *ref, err)
	}
	img, err := layoutImage(*dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "image-archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	// containerd names an imported image by this annotation.
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"io.containerd.image.name": *ref})); err != nil {
		return err
	}
	return tarDir(tmp, *out)
}

// tarDir writes the files under dir as a tar (paths relative to dir).
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	werr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err := errors.Join(werr, tw.Close(), f.Close()); err != nil {
		os.Remove(out)
		return fmt.Errorf("archive %s: %w", out, err)
	}
	return nil
}

// layoutImage is the one image of an OCI layout.
func layoutImage(dir string) (v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s: %d images in the layout, want 1", dir, len(m.Manifests))
	}
	return idx.Image(m.Manifests[0].Digest)
}

// serve runs an OCI registry (go-containerregistry's) until SIGTERM.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:5000", "address to listen on")
	dir := fs.String("dir", "", "directory for the blobs (default: memory)")
	_ = fs.Parse(args)
	var opts []registry.Option
	if *dir != "" {
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return err
		}
		opts = append(opts, registry.WithBlobHandler(registry.NewDiskBlobHandler(*dir)))
	}
	opts = append(opts, registry.Logger(log.New(os.Stderr, "registry: ", log.LstdFlags)))
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(opts...), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		_ = srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "registry: serving on %s\n", l.Addr())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labelFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("--label %q: want KEY=VALUE", v)
	}
	l[k] = val
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
