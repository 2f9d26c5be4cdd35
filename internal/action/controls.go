package action

// Sources of the hybrid controls of unattended hours (package autorule).
const (
	SourceAutoRule Source = "auto_rule" // an auto-rule on the audit trail
	SourceAnomaly  Source = "anomaly"   // an anomaly rule (a burst of calls)
)
