-- A long filter: thirty conditions joined by AND and OR.
SELECT id FROM events
WHERE kind = 'a' AND source = 'b' AND level >= 3 AND created_at > now() - interval '1 day'
  AND user_id IS NOT NULL AND session_id IS NOT NULL AND host LIKE 'web-%' AND path NOT LIKE '/health%'
  AND status BETWEEN 200 AND 499 AND method IN ('GET', 'POST') AND duration_ms < 5000
  AND country <> 'XX' AND region = 'eu' AND (tags @> ARRAY['x'] OR tags @> ARRAY['y'])
  AND NOT deleted AND NOT archived AND version >= 2 AND version < 10 AND team = 'core'
  AND ip <<= inet '10.0.0.0/8' AND (payload ->> 'kind') = 'click' AND size > 0 AND size < 1000000
  AND a = 1 AND b = 2 AND c = 3 AND d = 4 AND e = 5 AND f = 6 AND g = 7
ORDER BY created_at DESC
LIMIT 50;
