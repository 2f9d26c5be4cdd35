-- A reporting query of the kind agents write: joins, CTEs, window functions, CASE.
WITH monthly AS (
  SELECT date_trunc('month', o.created_at) AS month,
         c.region,
         sum(oi.quantity * oi.unit_price * (1 - coalesce(oi.discount, 0))) AS revenue,
         count(DISTINCT o.id) AS orders
  FROM orders o
  JOIN customers c ON c.id = o.customer_id
  JOIN order_items oi ON oi.order_id = o.id
  LEFT JOIN refunds r ON r.order_id = o.id AND r.status = 'approved'
  WHERE o.created_at >= now() - interval '12 months'
    AND o.status IN ('paid', 'shipped', 'delivered')
    AND r.id IS NULL
    AND c.is_test = false
    AND (c.region <> 'internal' OR c.region IS NULL)
  GROUP BY 1, 2
), ranked AS (
  SELECT month, region, revenue, orders,
         rank() OVER (PARTITION BY month ORDER BY revenue DESC) AS rnk,
         revenue - lag(revenue) OVER (PARTITION BY region ORDER BY month) AS delta,
         CASE WHEN orders > 1000 THEN 'large' WHEN orders > 100 THEN 'medium' ELSE 'small' END AS size
  FROM monthly
)
SELECT month, region, round(revenue::numeric, 2) AS revenue, orders, rnk, delta, size
FROM ranked
WHERE rnk <= 5
ORDER BY month DESC, rnk
LIMIT 200;
