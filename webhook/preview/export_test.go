package preview

// KeptAnswers is how many answers the handler keeps.
func (h *MachineConfigPreview) KeptAnswers() int { return len(h.answers.entries) }
