package registries

// TestdataConfs are the registries.conf files of testdata/ (what the MCO
// renders with no mirror sets, and for IDMSs, ITMSs and blocked sources;
// settings the library does not hand back and unmodelled keys; scopes,
// wildcard prefixes and mirror-by-digest-only; TestDiff's base), for
// FuzzRegistriesConf's seeds.
var TestdataConfs = []string{mcoBase, mcoIDMS, testdataConf("idms-itms-blocked.conf"), testdataConf("unmodelled-keys.conf"), testdataConf("scopes.conf"), baseConf}
