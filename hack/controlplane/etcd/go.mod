module github.com/ndp-dev/ndp/hack/controlplane/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v3.6.16
