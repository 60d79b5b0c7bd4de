# A policy replacing the engine's library (lib.file_claims and the
# declarative rule) to claim what other policies declare.
package ndp.lib

file_changes := []
