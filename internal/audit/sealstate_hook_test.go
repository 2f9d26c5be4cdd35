package audit

// WriteSealStateForTest writes a sealing key file (tests that forge one).
var WriteSealStateForTest = writeSealState
