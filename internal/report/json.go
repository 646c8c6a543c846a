package report

import (
	"encoding/json"

	"github.com/perfsleuth/perfsleuth/internal/model"
)

// JSON renders the run record as indented JSON, as model.Save writes it.
func JSON(run *model.Run) ([]byte, error) {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
