package clusterdiff

// ChangeSet is what a diff applies to the cluster's objects: manifests
// created or updated together, and objects deleted by name.
type ChangeSet struct {
	Apply []Entry
	// Delete are the objects named by --delete; applying one that does
	// not exist is an error.
	Delete []Key
}
